/*
 * config.c - effective settings of one tool: defaults, ./.inferscope.yaml,
 * environment and command line, each value tagged with the rank and the
 * place of the source that set it (see isc_config_api.h).
 *
 *   rank:  DEFAULT < FILE (top level) < SECTION < ENV < CLI
 *
 * A load computes its assignments first and applies them only when the
 * whole source is valid, so a failed load leaves the config unchanged.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <yaml.h>

#include "isc.h"
#include "isc_config_api.h"

#define DEFAULT_FILE "./.inferscope.yaml"
#define TOOL_PREFIX "iscope-"

enum rank { RANK_DEFAULT, RANK_FILE, RANK_SECTION, RANK_ENV, RANK_CLI };

struct val {
	char *text;   /* NULL = unset */
	char *source; /* NULL = "default" */
	enum rank rank;
};

struct isc_config {
	char *tool;
	const char *section; /* inside tool */
	struct isc_opt *opts; /* caller's, then built-ins */
	size_t n, nuser;
	struct val *vals;
};

/* One assignment a load wants to make. */
struct pending {
	const char *text; /* NULL = none */
	enum rank rank;
	size_t line;
};

static const struct isc_opt builtins[] = {
	{ "help", 'h', ISC_OPT_FLAG, NULL, NULL, NULL, NULL, "show this help and exit" },
	{ "version", 0, ISC_OPT_FLAG, NULL, NULL, NULL, NULL, "show the version and exit" },
	{ "show-config", 0, ISC_OPT_FLAG, NULL, NULL, NULL, NULL,
	  "show the effective settings and where each came from, and exit" },
};
#define NBUILTIN (sizeof(builtins) / sizeof(builtins[0]))

/* Sections of the other front-ends: skipped silently, never warned about. */
static const char *const known_sections[] = { "record", "merge", "analyze", "report", "inferscope" };

/*
 * Every file key of every tool (their option tables live in tools/, out of
 * the library's sight), so that a top-level key one tool does not know is
 * silent when another tool reads it, warned about when none does, and the
 * warning can suggest the nearest real key.  tests/cli/config.bats checks
 * this list against each tool's --help.  A key whose top level belongs to
 * another tool (both merge and report have `format`; a top-level `format:
 * html` means the report's) is read by this section's tool only from its
 * own section: top_level = false.
 */
static const struct known_key {
	const char *section, *key;
	bool top_level;
} known_keys[] = {
	{ "record", "ring", true },          { "record", "trace_size_mb", true },
	{ "record", "sample_hz", true },     { "record", "flush_ms", true },
	{ "record", "zstd_level", true },    { "record", "quiet", true },
	{ "record", "no_cuda", true },       { "record", "log_level", true },
	{ "record", "python", true },        { "record", "python_hz", true },
	{ "record", "memory_limit", true },  { "record", "native", true },
	{ "record", "native_hz", true },     { "record", "native_stack", true },
	{ "record", "cuda_driver_api", true }, { "record", "memory_sampling", true },
	{ "merge", "format", false },        { "merge", "quiet", true },
	{ "merge", "sort_memory", true },    { "merge", "log_level", true },
	{ "analyze", "pretty", true },       { "analyze", "top", true },
	{ "analyze", "hta_compat", true },   { "analyze", "quiet", true },
	{ "analyze", "log_level", true },    { "analyze", "threshold", true }, { "analyze", "latency_basis", true },
	{ "analyze", "fail_on_regression", true }, { "analyze", "no_compensation", true },
	{ "analyze", "native_nodes", true },
	{ "report", "format", true },
	{ "report", "quiet", true },         { "report", "log_level", true },
};
#define NKNOWN (sizeof(known_keys) / sizeof(known_keys[0]))

static int parse_bool(const char *s, bool *b)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };
	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i])) {
			*b = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*b = false;
			return 0;
		}
	}
	return -EINVAL;
}

static const char *bool_text(bool b)
{
	return b ? "true" : "false";
}

static long find(const struct isc_config *c, const char *name)
{
	if (!c || !name)
		return -1;
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->opts[i].name, name))
			return (long)i;
	return -1;
}

/* Stores text (copied) from source (copied; NULL = default) unless a
 * higher-ranked source already set the value. */
static int set_val(struct isc_config *c, size_t i, const char *text, const char *source, enum rank rank)
{
	struct val *v = &c->vals[i];
	char *t = NULL, *s = NULL;
	if (rank < v->rank)
		return 0;
	if ((text && !(t = strdup(text))) || (source && !(s = strdup(source)))) {
		free(t);
		isc_err_push("Cannot store setting %s: out of memory", c->opts[i].name);
		return -ENOMEM;
	}
	free(v->text);
	free(v->source);
	v->text = t;
	v->source = s;
	v->rank = rank;
	return 0;
}

/* Checks entry i of the table against the entries before it; 0 or -EINVAL. */
static int check_opt(const struct isc_config *c, size_t i)
{
	const struct isc_opt *o = &c->opts[i];
	bool b;
	if (!o->name || !*o->name || o->name[0] == '-') {
		isc_err_push("option table: entry %zu has no usable name", i);
		return -EINVAL;
	}
	for (size_t j = 0; j < i; j++) {
		const struct isc_opt *p = &c->opts[j];
		if (!strcmp(o->name, p->name) || (o->short_name && o->short_name == p->short_name) ||
		    (o->yaml_key && p->yaml_key && !strcmp(o->yaml_key, p->yaml_key))) {
			isc_err_push("option table: --%s clashes with --%s", o->name, p->name);
			return -EINVAL;
		}
	}
	if (o->arg == ISC_OPT_FLAG && o->def && parse_bool(o->def, &b) < 0) {
		isc_err_push("option table: --%s: default '%s' is not true or false", o->name, o->def);
		return -EINVAL;
	}
	return 0;
}

int isc_config_new(struct isc_config **cp, const char *tool, const struct isc_opt *opts, size_t n)
{
	struct isc_config *c;
	bool h_taken = false;
	int ret = -ENOMEM;

	*cp = NULL;
	if (!(c = calloc(1, sizeof(*c))) || !(c->tool = strdup(tool)) ||
	    !(c->opts = calloc(n + NBUILTIN, sizeof(*c->opts))) ||
	    !(c->vals = calloc(n + NBUILTIN, sizeof(*c->vals)))) {
		isc_err_push("Cannot create configuration: out of memory");
		goto fail;
	}
	c->section = c->tool;
	if (!strncmp(tool, TOOL_PREFIX, strlen(TOOL_PREFIX)))
		c->section += strlen(TOOL_PREFIX);
	if (n)
		memcpy(c->opts, opts, n * sizeof(*opts));
	c->nuser = c->n = n;
	for (size_t i = 0; i < n; i++)
		h_taken |= opts[i].short_name == 'h';
	for (size_t b = 0; b < NBUILTIN; b++) {
		if (find(c, builtins[b].name) >= 0)
			continue; /* the tool defines its own */
		c->opts[c->n] = builtins[b];
		if (h_taken)
			c->opts[c->n].short_name = 0;
		c->n++;
	}

	for (size_t i = 0; i < c->n; i++) {
		const struct isc_opt *o = &c->opts[i];
		bool b = false;
		if ((ret = check_opt(c, i)) < 0)
			goto fail;
		if (o->arg == ISC_OPT_FLAG) {
			if (o->def)
				parse_bool(o->def, &b);
			ret = set_val(c, i, bool_text(b), NULL, RANK_DEFAULT);
		} else {
			ret = set_val(c, i, o->def, NULL, RANK_DEFAULT);
		}
		if (ret < 0)
			goto fail;
	}
	isc_log_set_tool(tool);
	*cp = c;
	return 0;
fail:
	isc_config_free(c);
	return ret;
}

void isc_config_free(struct isc_config *c)
{
	if (!c)
		return;
	for (size_t i = 0; c->vals && i < c->n; i++) {
		free(c->vals[i].text);
		free(c->vals[i].source);
	}
	free(c->vals);
	free(c->opts);
	free(c->tool);
	free(c);
}

/* ---- ./.inferscope.yaml ------------------------------------------------ */

struct file_load {
	struct isc_config *c;
	yaml_document_t *doc;
	const char *path;
	struct pending *pend; /* one per option */
	const char *warned[32]; /* unknown keys already warned about (borrowed from doc) */
	size_t nwarned;
};

static size_t line_of(const yaml_node_t *n)
{
	return n->start_mark.line + 1;
}

/* A scalar's text, or NULL after pushing "FILE:LINE: what must be ..." */
static const char *scalar(const struct file_load *fl, const yaml_node_t *n, const char *what)
{
	const char *s = (const char *)n->data.scalar.value;
	if (n->type != YAML_SCALAR_NODE) {
		isc_err_push("%s:%zu: %s must be a single value, not a %s", fl->path, line_of(n), what,
			     n->type == YAML_MAPPING_NODE ? "mapping" : "list");
		return NULL;
	}
	if (strlen(s) != n->data.scalar.length) {
		isc_err_push("%s:%zu: %s contains a NUL byte", fl->path, line_of(n), what);
		return NULL;
	}
	return s;
}

static bool is_null(const yaml_node_t *n)
{
	const char *s = (const char *)n->data.scalar.value;
	return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"));
}

static bool is_known_section(const char *s)
{
	for (size_t i = 0; i < sizeof(known_sections) / sizeof(known_sections[0]); i++)
		if (!strcmp(s, known_sections[i]))
			return true;
	return false;
}

/* Levenshtein distance of a and b, capped: anything above 3 is 4. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[64], cur[64];
	if (la > 62 || lb > 62 || (la > lb ? la - lb : lb - la) > 3)
		return 4;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, (lb + 1) * sizeof(*prev));
	}
	return prev[lb] > 4 ? 4 : prev[lb];
}

/* Keeps cand in *best when it is nearer to key than what *best holds. */
static void consider(const char *key, const char *cand, const char **best, size_t *best_d)
{
	size_t d = edit_distance(key, cand), len = strlen(key);
	size_t limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;
	if (d <= limit && d < *best_d) {
		*best = cand;
		*best_d = d;
	}
}

/*
 * Warns once per key (a repeated unknown key is one mistake) about an
 * unknown key, suggesting the nearest key of this tool, then of any tool,
 * then a section name, writing '-' as '_' first (the option spelling that
 * --show-config prints is not a file key).
 */
static void warn_unknown(struct file_load *fl, const char *key, size_t line, const char *where)
{
	const char *best = NULL;
	size_t best_d = 4;
	char alt[128];
	size_t i;

	for (i = 0; i < fl->nwarned; i++)
		if (!strcmp(fl->warned[i], key))
			return;
	if (fl->nwarned < sizeof(fl->warned) / sizeof(fl->warned[0]))
		fl->warned[fl->nwarned++] = key;
	for (i = 0; key[i] && i < sizeof(alt) - 1; i++)
		alt[i] = key[i] == '-' ? '_' : key[i];
	alt[i] = '\0';
	for (size_t o = 0; o < fl->c->n; o++)
		if (fl->c->opts[o].yaml_key)
			consider(alt, fl->c->opts[o].yaml_key, &best, &best_d);
	if (!*where) { /* the top level: any tool's key, or a section */
		for (size_t k = 0; k < NKNOWN; k++)
			consider(alt, known_keys[k].key, &best, &best_d);
		for (size_t k = 0; k < sizeof(known_sections) / sizeof(known_sections[0]); k++)
			consider(alt, known_sections[k], &best, &best_d);
	}
	if (best)
		isc_log(ISC_LOG_WARN, "%s:%zu: unknown key '%s'%s (ignored; did you mean '%s'?)", fl->path, line,
			key, where, best);
	else
		isc_log(ISC_LOG_WARN, "%s:%zu: unknown key '%s'%s (ignored)", fl->path, line, key, where);
}

/* Is key a top-level key some tool reads (this one excepted)? */
static bool other_tools_key(const struct isc_config *c, const char *key)
{
	for (size_t k = 0; k < NKNOWN; k++)
		if (strcmp(known_keys[k].section, c->section) && known_keys[k].top_level &&
		    !strcmp(known_keys[k].key, key))
			return true;
	return false;
}

/* Does this tool read key from its own section only? */
static bool section_only(const struct isc_config *c, const char *key)
{
	for (size_t k = 0; k < NKNOWN; k++)
		if (!strcmp(known_keys[k].section, c->section) && !known_keys[k].top_level &&
		    !strcmp(known_keys[k].key, key))
			return true;
	return false;
}

/* One key: value pair at rank (top level or this tool's section). */
static int take_pair(struct file_load *fl, const yaml_node_t *k, const char *key, const yaml_node_t *v,
		     enum rank rank)
{
	struct isc_config *c = fl->c;
	const char *text;
	size_t i, line = line_of(k);
	bool b;

	for (i = 0; i < c->n; i++)
		if (c->opts[i].yaml_key && !strcmp(c->opts[i].yaml_key, key))
			break;
	if (i < c->n && rank == RANK_FILE && section_only(c, key)) {
		isc_log(ISC_LOG_DEBUG, "%s:%zu: top-level '%s' is another tool's; %s reads it under '%s:' only",
			fl->path, line, key, c->tool, c->section);
		return 0;
	}
	if (i == c->n) {
		if (rank == RANK_SECTION) {
			char where[96];
			snprintf(where, sizeof(where), " in section '%s'", c->section);
			warn_unknown(fl, key, line, where);
		} else if (v->type == YAML_MAPPING_NODE) {
			const char *best = NULL;
			size_t best_d = 4;
			for (size_t k = 0; k < sizeof(known_sections) / sizeof(known_sections[0]); k++)
				consider(key, known_sections[k], &best, &best_d);
			isc_log(ISC_LOG_WARN, "%s:%zu: unknown section '%s' (ignored%s%s%s)", fl->path, line, key,
				best ? "; did you mean '" : "", best ? best : "", best ? "'?" : "");
		} else if (other_tools_key(c, key) || section_only(c, key)) {
			isc_log(ISC_LOG_DEBUG, "%s:%zu: '%s' is not a %s setting (ignored)", fl->path, line,
				key, c->tool);
		} else {
			warn_unknown(fl, key, line, "");
		}
		return 0;
	}
	if (!(text = scalar(fl, v, key)))
		return -EINVAL;
	if (is_null(v))
		return 0;
	if (c->opts[i].arg == ISC_OPT_FLAG) {
		if (parse_bool(text, &b) < 0) {
			isc_err_push("%s:%zu: invalid value '%s' for %s: expected true or false", fl->path,
				     line, text, key);
			return -EINVAL;
		}
		text = bool_text(b);
	}
	if (fl->pend[i].text && fl->pend[i].rank == rank)
		isc_log(ISC_LOG_WARN, "%s:%zu: '%s' repeats line %zu (this one wins)", fl->path, line, key,
			fl->pend[i].line);
	if (!fl->pend[i].text || rank >= fl->pend[i].rank)
		fl->pend[i] = (struct pending){ text, rank, line };
	return 0;
}

/* Walks pairs of a mapping node (the top level or the tool's section). */
static int take_mapping(struct file_load *fl, const yaml_node_t *m, bool top)
{
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = yaml_document_get_node(fl->doc, p->key);
		const yaml_node_t *v = yaml_document_get_node(fl->doc, p->value);
		const char *key = scalar(fl, k, "a key");
		int ret;
		if (!key)
			return -EINVAL;
		if (top && !strcmp(key, fl->c->section)) {
			if (is_null(v))
				continue;
			if (v->type != YAML_MAPPING_NODE) {
				isc_err_push("%s:%zu: section '%s' must be a mapping of settings", fl->path,
					     line_of(k), key);
				return -EINVAL;
			}
			ret = take_mapping(fl, v, false);
		} else if (top && is_known_section(key)) {
			continue; /* another tool's */
		} else {
			ret = take_pair(fl, k, key, v, top ? RANK_FILE : RANK_SECTION);
		}
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Turns a libyaml failure into -errno and "FILE:LINE: problem". */
static int yaml_failure(const yaml_parser_t *y, FILE *f, const char *path)
{
	if (y->error == YAML_MEMORY_ERROR) {
		isc_err_push("%s: Cannot parse: out of memory", path);
		return -ENOMEM;
	}
	if (y->error == YAML_READER_ERROR && ferror(f)) {
		int e = errno ? errno : EIO;
		isc_err_push("%s: Cannot read: %s", path, strerror(e));
		return -e;
	}
	if (y->error == YAML_READER_ERROR) {
		isc_err_push("%s: byte %zu: %s", path, y->problem_offset,
			     y->problem ? y->problem : "unreadable text");
		return -EINVAL;
	}
	if (y->context)
		isc_err_push("%s:%zu: %s (%s started at line %zu)", path, y->problem_mark.line + 1,
			     y->problem ? y->problem : "syntax error", y->context, y->context_mark.line + 1);
	else
		isc_err_push("%s:%zu: %s", path, y->problem_mark.line + 1,
			     y->problem ? y->problem : "syntax error");
	return -EINVAL;
}

int isc_config_load_file(struct isc_config *c, const char *path)
{
	yaml_parser_t y;
	yaml_document_t doc, extra;
	struct file_load fl = { .c = c, .doc = &doc, .path = path ? path : DEFAULT_FILE };
	bool have_doc = false;
	yaml_node_t *root;
	char src[4096 + 32];
	FILE *f;
	int ret;

	if (!(f = fopen(fl.path, "r"))) {
		ret = -errno;
		if (ret == -ENOENT || ret == -ENOTDIR) {
			isc_log(ISC_LOG_DEBUG, "%s: not found, using no configuration file", fl.path);
			return 0;
		}
		isc_err_push("%s: Cannot open: %s", fl.path, strerror(-ret));
		return ret;
	}
	if (!yaml_parser_initialize(&y)) {
		fclose(f);
		isc_err_push("%s: Cannot parse: out of memory", fl.path);
		return -ENOMEM;
	}
	yaml_parser_set_input_file(&y, f);
	ret = -ENOMEM;
	if (!(fl.pend = calloc(c->n, sizeof(*fl.pend)))) {
		isc_err_push("%s: Cannot parse: out of memory", fl.path);
		goto out;
	}
	errno = 0;
	if (!yaml_parser_load(&y, &doc)) {
		ret = yaml_failure(&y, f, fl.path);
		goto out;
	}
	have_doc = true;

	ret = 0;
	root = yaml_document_get_root_node(&doc);
	if (root && !is_null(root)) {
		if (root->type != YAML_MAPPING_NODE) {
			isc_err_push("%s:%zu: expected a mapping of settings at the top level", fl.path,
				     line_of(root));
			ret = -EINVAL;
			goto out;
		}
		if ((ret = take_mapping(&fl, root, true)) < 0)
			goto out;
	}
	if (root) { /* the stream must end after one document */
		if (!yaml_parser_load(&y, &extra)) {
			ret = yaml_failure(&y, f, fl.path);
			goto out;
		}
		if (yaml_document_get_root_node(&extra)) {
			isc_err_push("%s:%zu: only one YAML document is allowed", fl.path,
				     extra.start_mark.line + 1);
			ret = -EINVAL;
		}
		yaml_document_delete(&extra);
		if (ret < 0)
			goto out;
	}

	for (size_t i = 0; i < c->n && ret == 0; i++) {
		if (!fl.pend[i].text)
			continue;
		snprintf(src, sizeof(src), "%s:%zu", fl.path, fl.pend[i].line);
		ret = set_val(c, i, fl.pend[i].text, src, fl.pend[i].rank);
	}
out:
	if (have_doc)
		yaml_document_delete(&doc);
	yaml_parser_delete(&y);
	free(fl.pend);
	fclose(f);
	return ret;
}

/* ---- environment ------------------------------------------------------- */

static const char *env_lookup(char **envp, const char *name)
{
	size_t len = strlen(name);
	for (; *envp; envp++)
		if (!strncmp(*envp, name, len) && (*envp)[len] == '=')
			return *envp + len + 1;
	return NULL;
}

int isc_config_load_env(struct isc_config *c, char **envp)
{
	const char **text;
	char src[256];
	int ret = 0;

	if (!envp)
		envp = environ;
	if (!envp)
		return 0;
	if (!(text = calloc(c->n, sizeof(*text)))) {
		isc_err_push("Cannot read the environment: out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->n; i++) {
		const struct isc_opt *o = &c->opts[i];
		const char *s;
		bool b;
		if (!o->env || !(s = env_lookup(envp, o->env)) || !*s)
			continue;
		if (o->arg == ISC_OPT_FLAG) {
			if (parse_bool(s, &b) < 0) {
				isc_err_push("invalid value '%s' for --%s (from %s): expected true or false",
					     s, o->name, o->env);
				ret = -EINVAL;
				goto out;
			}
			s = bool_text(b);
		}
		text[i] = s;
	}
	for (size_t i = 0; i < c->n && ret == 0; i++) {
		if (!text[i])
			continue;
		snprintf(src, sizeof(src), "environment %s", c->opts[i].env);
		ret = set_val(c, i, text[i], src, RANK_ENV);
	}
out:
	free(text);
	return ret;
}

/* ---- setting and getting ----------------------------------------------- */

int isc_config_set(struct isc_config *c, const char *name, const char *value)
{
	long i = find(c, name);
	bool b;
	if (i < 0) {
		isc_err_push("unknown option '--%s'", name);
		return -ENOENT;
	}
	if (c->opts[i].arg == ISC_OPT_FLAG) {
		if (!value || parse_bool(value, &b) < 0) {
			isc_err_push("invalid value '%s' for --%s: expected true or false",
				     value ? value : "(null)", name);
			return -EINVAL;
		}
		value = bool_text(b);
	}
	return set_val(c, (size_t)i, value, "command line", RANK_CLI);
}

const char *isc_config_get(const struct isc_config *c, const char *name)
{
	long i = find(c, name);
	return i < 0 ? NULL : c->vals[i].text;
}

bool isc_config_flag(const struct isc_config *c, const char *name)
{
	const char *s = isc_config_get(c, name);
	return s && !strcmp(s, "true");
}

const char *isc_config_source(const struct isc_config *c, const char *name)
{
	long i = find(c, name);
	if (i < 0)
		return NULL;
	return c->vals[i].source ? c->vals[i].source : "default";
}

const struct isc_opt *isc_config_opts_borrow(const struct isc_config *c, size_t *n)
{
	*n = c->n;
	return c->opts;
}

const char *isc_config_tool_borrow(const struct isc_config *c)
{
	return c->tool;
}

/* Decimal digits at *s into *v, advancing *s; -EINVAL none, -ERANGE overflow. */
static int parse_digits(const char **s, uint64_t *v)
{
	const char *p = *s;
	*v = 0;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (*v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		*v = *v * 10 + d;
	}
	*s = p;
	return 0;
}

int isc_parse_size(const char *s, uint64_t *bytes)
{
	static const char units[] = "kmgt";
	const char *u;
	unsigned shift = 0;
	uint64_t v;
	int ret = parse_digits(&s, &v);

	if (ret < 0)
		return ret;
	if (*s && *s != 'b' && *s != 'B') {
		if (!(u = strchr(units, (char)(*s | 0x20))) || !*u)
			return -EINVAL;
		shift = 10 * (unsigned)(u - units + 1);
		s++;
		if (*s == 'i' || *s == 'I') {
			s++;
			if (*s != 'b' && *s != 'B')
				return -EINVAL;
		}
	}
	if (*s == 'b' || *s == 'B')
		s++;
	if (*s)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*bytes = v << shift;
	return 0;
}

/*
 * Common part of the typed getters: finds name, returns 1 with *text set,
 * 0 when unset, -ENOENT when unknown.
 */
static int typed_lookup(const struct isc_config *c, const char *name, const char **text, long *idx)
{
	long i = find(c, name);
	if (i < 0) {
		isc_err_push("unknown option '--%s'", name);
		return -ENOENT;
	}
	*idx = i;
	*text = c->vals[i].text;
	return *text ? 1 : 0;
}

/* Pushes "invalid value 'x' for --name (from SOURCE): why"; returns -EINVAL. */
static int invalid(const struct isc_config *c, long i, const char *why)
{
	const struct val *v = &c->vals[i];
	const char *from = v->rank == RANK_ENV ? c->opts[i].env : v->source ? v->source : "default";
	isc_err_push("invalid value '%s' for --%s (from %s): %s", v->text, c->opts[i].name, from, why);
	return -EINVAL;
}

int isc_config_get_u64(const struct isc_config *c, const char *name, uint64_t *out)
{
	const char *s;
	uint64_t v;
	long i;
	int ret = typed_lookup(c, name, &s, &i);

	if (ret <= 0)
		return ret;
	ret = parse_digits(&s, &v);
	if (ret == -ERANGE)
		return invalid(c, i, "too large");
	if (ret < 0 || *s)
		return invalid(c, i, "expected a whole number");
	*out = v;
	return 1;
}

int isc_config_get_size(const struct isc_config *c, const char *name, uint64_t *bytes)
{
	const char *s;
	uint64_t v;
	long i;
	int ret = typed_lookup(c, name, &s, &i);

	if (ret <= 0)
		return ret;
	ret = isc_parse_size(s, &v);
	if (ret == -ERANGE)
		return invalid(c, i, "too large");
	if (ret < 0)
		return invalid(c, i, "expected a size like 512k, 64M or 1G");
	if (*s && strspn(s, "0123456789") == strlen(s)) { /* a bare number: MiB, from every source */
		if (v > UINT64_MAX >> 20)
			return invalid(c, i, "too large");
		v <<= 20;
	}
	*bytes = v;
	return 1;
}

int isc_config_get_choice(const struct isc_config *c, const char *name, const char *const *choices, int *idx)
{
	const char *s;
	long i;
	int ret = typed_lookup(c, name, &s, &i);
	char why[256];
	size_t used;
	if (ret <= 0)
		return ret;
	for (int k = 0; choices[k]; k++)
		if (!strcmp(s, choices[k])) {
			*idx = k;
			return 1;
		}
	used = (size_t)snprintf(why, sizeof(why), "expected ");
	for (int k = 0; choices[k] && used < sizeof(why); k++)
		used += (size_t)snprintf(why + used, sizeof(why) - used, "%s%s", k == 0 ? "" : !choices[k + 1] ? " or " : ", ",
					 choices[k]);
	return invalid(c, i, why);
}

int isc_config_get_double(const struct isc_config *c, const char *name, double lo, double hi, double *out)
{
	const char *s;
	char *end, why[128];
	long i;
	int ret = typed_lookup(c, name, &s, &i);
	if (ret <= 0)
		return ret;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno || !(v > lo && v < hi)) {
		snprintf(why, sizeof(why), "expected a number above %g and below %g", lo, hi);
		return invalid(c, i, why);
	}
	*out = v;
	return 1;
}

void isc_config_show(const struct isc_config *c, FILE *out)
{
	for (size_t i = 0; i < c->nuser; i++)
		fprintf(out, "%s = %s  (%s)\n", c->opts[i].name,
			c->vals[i].text ? c->vals[i].text : "(unset)",
			c->vals[i].source ? c->vals[i].source : "default");
}
