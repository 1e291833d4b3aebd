/*
 * kineto_json.c - the JSON scanner of the Kineto importer for one
 * traceEvents element in memory: strings (unescaped in place or into an
 * arena), numbers kept as text and converted to integers exactly, any
 * value validated and skipped with a depth limit, and one object iterator
 * (isc_kjson_member) that every object walk uses.
 */
#include <errno.h>
#include <string.h>

#include "kineto.h"

void isc_kjson_ws(struct kt_jp *j)
{
	while (j->p < j->e && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
		j->p++;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static long hex4(const char *p, const char *e)
{
	long v = 0;
	if (e - p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		int h = hexval(p[i]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

bool isc_kjson_str(struct kt_jp *j, char **s, size_t *n)
{
	if (j->p >= j->e || *j->p != '"')
		return false;
	char *start = j->p + 1, *q = memchr(start, '"', (size_t)(j->e - start));
	if (!q)
		return false;
	char *bs = memchr(start, '\\', (size_t)(q - start));
	if (!bs) {
		*s = start;
		*n = (size_t)(q - start);
		j->p = q + 1;
		return true;
	}
	char *w0 = j->arena ? j->arena + j->aused : start, *w = w0, *r = bs;
	if (j->arena)
		memcpy(w, start, (size_t)(bs - start));
	w += bs - start;
	while (r < j->e) {
		char c = *r;
		if (c == '"') {
			*s = w0;
			*n = (size_t)(w - w0);
			j->p = r + 1;
			if (j->arena)
				j->aused += *n;
			return true;
		}
		if (c != '\\') {
			*w++ = *r++;
			continue;
		}
		if (r + 1 >= j->e)
			return false;
		char x = r[1];
		r += 2;
		switch (x) {
		case '"': case '\\': case '/': *w++ = x; break;
		case 'b': *w++ = '\b'; break;
		case 'f': *w++ = '\f'; break;
		case 'n': *w++ = '\n'; break;
		case 'r': *w++ = '\r'; break;
		case 't': *w++ = '\t'; break;
		case 'u': {
			long cp = hex4(r, j->e);
			if (cp < 0)
				return false;
			r += 4;
			if (cp >= 0xD800 && cp < 0xDC00 && j->e - r >= 6 && r[0] == '\\' && r[1] == 'u') {
				long lo = hex4(r + 2, j->e);
				if (lo >= 0xDC00 && lo < 0xE000) {
					cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
					r += 6;
				}
			}
			if (cp >= 0xD800 && cp < 0xE000)
				cp = 0xFFFD; /* lone surrogate */
			if (cp < 0x80) {
				*w++ = (char)cp;
			} else if (cp < 0x800) {
				*w++ = (char)(0xC0 | cp >> 6);
				*w++ = (char)(0x80 | (cp & 0x3F));
			} else if (cp < 0x10000) {
				*w++ = (char)(0xE0 | cp >> 12);
				*w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
				*w++ = (char)(0x80 | (cp & 0x3F));
			} else {
				*w++ = (char)(0xF0 | cp >> 18);
				*w++ = (char)(0x80 | ((cp >> 12) & 0x3F));
				*w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
				*w++ = (char)(0x80 | (cp & 0x3F));
			}
			break;
		}
		default:
			return false;
		}
	}
	return false;
}

bool isc_kjson_num(struct kt_jp *j, char **s, size_t *n)
{
	char *p = j->p;
	if (p < j->e && *p == '-')
		p++;
	if (p >= j->e || *p < '0' || *p > '9')
		return false;
	if (*p == '0')
		p++;
	else
		while (p < j->e && *p >= '0' && *p <= '9')
			p++;
	if (p < j->e && *p == '.') {
		if (++p >= j->e || *p < '0' || *p > '9')
			return false;
		while (p < j->e && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < j->e && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < j->e && (*p == '+' || *p == '-'))
			p++;
		if (p >= j->e || *p < '0' || *p > '9')
			return false;
		while (p < j->e && *p >= '0' && *p <= '9')
			p++;
	}
	*s = j->p;
	*n = (size_t)(p - j->p);
	j->p = p;
	return true;
}

static bool jcontainer(struct kt_jp *j, char close)
{
	struct kt_jv v;
	if (++j->depth > j->max_depth)
		return false;
	if (close == '}') {
		unsigned st = 0;
		char *k;
		size_t kn;
		int rc;
		while ((rc = isc_kjson_member(j, &st, &k, &kn)) == 1)
			if (!isc_kjson_value(j, &v))
				return false;
		if (rc < 0)
			return false;
		j->depth--;
		return true;
	}
	j->p++;
	isc_kjson_ws(j);
	if (j->p < j->e && *j->p == close) {
		j->p++;
		j->depth--;
		return true;
	}
	for (;;) {
		isc_kjson_ws(j);
		if (!isc_kjson_value(j, &v))
			return false;
		isc_kjson_ws(j);
		if (j->p >= j->e)
			return false;
		if (*j->p == ',') {
			j->p++;
			continue;
		}
		if (*j->p++ != close)
			return false;
		j->depth--;
		return true;
	}
}

bool isc_kjson_value(struct kt_jp *j, struct kt_jv *v)
{
	memset(v, 0, sizeof(*v));
	if (j->p >= j->e)
		return false;
	switch (*j->p) {
	case '"':
		v->t = J_STR;
		return isc_kjson_str(j, &v->s, &v->n);
	case '{':
		v->t = J_OBJ;
		return jcontainer(j, '}');
	case '[':
		v->t = J_ARR;
		return jcontainer(j, ']');
	case 't':
	case 'f':
	case 'n': {
		static const char *lits[] = { "true", "false", "null" };
		for (int i = 0; i < 3; i++) {
			size_t l = strlen(lits[i]);
			if ((size_t)(j->e - j->p) >= l && !memcmp(j->p, lits[i], l)) {
				j->p += l;
				v->t = J_LIT;
				return true;
			}
		}
		return false;
	}
	default:
		v->t = J_NUM;
		return isc_kjson_num(j, &v->s, &v->n);
	}
}

int isc_kjson_member(struct kt_jp *j, unsigned *state, char **k, size_t *kn)
{
	if (!*state) { /* at '{' */
		*state = 1;
		j->p++;
		isc_kjson_ws(j);
		if (j->p < j->e && *j->p == '}') {
			j->p++;
			return 0;
		}
	} else { /* after a value */
		isc_kjson_ws(j);
		if (j->p >= j->e)
			return -1;
		if (*j->p == '}') {
			j->p++;
			return 0;
		}
		if (*j->p++ != ',')
			return -1;
		isc_kjson_ws(j);
	}
	if (!isc_kjson_str(j, k, kn))
		return -1;
	isc_kjson_ws(j);
	if (j->p >= j->e || *j->p++ != ':')
		return -1;
	isc_kjson_ws(j);
	return 1;
}

int isc_kjson_dec(const char *t, size_t n, int scale, int64_t *out, bool *inexact)
{
	const char *p = t, *e = t + n, *ip, *fp = NULL;
	size_t ni = 0, nf = 0;
	bool neg = false;
	long exp10 = 0;
	*inexact = false;
	if (p < e && *p == '-') {
		neg = true;
		p++;
	}
	ip = p;
	while (p < e && *p >= '0' && *p <= '9')
		p++, ni++;
	if (!ni)
		return -EINVAL;
	if (p < e && *p == '.') {
		fp = ++p;
		while (p < e && *p >= '0' && *p <= '9')
			p++, nf++;
		if (!nf)
			return -EINVAL;
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		bool eneg = false;
		size_t nd = 0;
		p++;
		if (p < e && (*p == '+' || *p == '-'))
			eneg = *p++ == '-';
		for (; p < e && *p >= '0' && *p <= '9'; p++, nd++)
			if (exp10 < 1000000)
				exp10 = exp10 * 10 + (*p - '0');
		if (!nd)
			return -EINVAL;
		if (eneg)
			exp10 = -exp10;
	}
	if (p != e)
		return -EINVAL;
	/* digits d[0..ni+nf) = int part then fraction; value = D * 10^shift */
	long shift = exp10 - (long)nf + scale, nd = (long)(ni + nf);
	long keep = shift >= 0 ? nd : nd + shift;
	uint64_t v = 0;
#define DIGIT(i) ((i) < (long)ni ? ip[i] : fp[(i) - (long)ni])
	for (long i = 0; i < keep && i < nd; i++) {
		unsigned d = (unsigned)(DIGIT(i) - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (shift > 0 && v) {
		for (long i = 0; i < shift; i++) {
			if (v > UINT64_MAX / 10)
				return -ERANGE;
			v *= 10;
		}
	} else if (shift < 0) {
		for (long i = keep < 0 ? 0 : keep; i < nd; i++)
			if (DIGIT(i) != '0')
				*inexact = true;
		if (keep >= 0 && keep < nd && DIGIT(keep) >= '5') {
			if (v == UINT64_MAX)
				return -ERANGE;
			v++;
		}
	}
#undef DIGIT
	if (v > (uint64_t)INT64_MAX + (neg ? 1 : 0))
		return -ERANGE;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}
