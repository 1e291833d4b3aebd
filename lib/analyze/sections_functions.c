/*
 * sections_functions.c - the functions table the sections rank: one row
 * per function (kind, name, file, line), its times summed over the string
 * ids that name it (one per process), and the identity order every ranking
 * falls back on.  cpu.top_functions, top_functions_in_scopes and
 * top_op_callers (sections_cpu.c) and memory.growth_top (sections_run.c)
 * sort it their own way.
 */
#include <stdlib.h>
#include <string.h>

#include "sections.h"

/* Orders source locations by name, file, line. */
int isc_ana_cmp_location(const char *name1, const char *file1, uint32_t line1, const char *name2, const char *file2,
			 uint32_t line2)
{
	int c;
	if ((c = strcmp(name1, name2)) || (c = strcmp(file1, file2)))
		return c;
	return line1 < line2 ? -1 : line1 > line2;
}

int isc_ana_fn_row_identity(const void *x, const void *y)
{
	const struct ana_fn_row *a = x, *b = y;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return isc_ana_cmp_location(a->name, a->file, a->line, b->name, b->file, b->line);
}

/* Rows sorted by identity, neighbours of the same identity summed. */
struct ana_fn_row *isc_ana_fn_rows(struct ana *a, size_t *m)
{
	struct ana_fn_row *rows = calloc(a->nfns ? a->nfns : 1, sizeof(*rows));
	size_t n = 0;
	*m = 0;
	if (!rows)
		return NULL;
	for (size_t i = 0; i < a->nfns; i++) {
		const struct ana_fn *f = &a->fns[i];
		const struct isc_tl_string *s = isc_timeline_string_borrow(a->t, f->name_id);
		rows[n++] = (struct ana_fn_row){ s ? s->name : "?", s ? s->file : "", s ? s->line : 0, f->kind,
						 f->calls, f->self_ns, f->total_ns, f->ops_self_ns, f->scoped_calls,
						 f->scoped_self_ns, f->growth_bytes, f->scoped_ops_self_ns,
						 f->sampled && !f->calls };
	}
	qsort(rows, n, sizeof(*rows), isc_ana_fn_row_identity);
	for (size_t i = 0; i < n; i++) {
		struct ana_fn_row *r = *m ? &rows[*m - 1] : NULL;
		if (r && !isc_ana_fn_row_identity(r, &rows[i])) {
			r->calls += rows[i].calls;
			r->self_ns += rows[i].self_ns;
			r->total_ns += rows[i].total_ns;
			r->ops_self_ns += rows[i].ops_self_ns;
			r->scoped_calls += rows[i].scoped_calls;
			r->scoped_self_ns += rows[i].scoped_self_ns;
			r->growth_bytes += rows[i].growth_bytes;
			r->scoped_ops_self_ns += rows[i].scoped_ops_self_ns;
			r->sampled = r->sampled && rows[i].sampled;
		} else {
			rows[(*m)++] = rows[i];
		}
	}
	return rows;
}
