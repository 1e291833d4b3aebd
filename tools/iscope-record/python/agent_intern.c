/*
 * agent_intern.c - the Python agent's ids for what its records name: code
 * objects, C callables (by PyMethodDef and type of self, or by object),
 * scope and mark names.  A key seen for the first time is named (a Python
 * API call, with the GIL), given the next id, defined by one STRING_DEF
 * record in the shared file's string area, and inserted in an
 * open-addressing table that _agent.c's lookups (tab_find, agent.h) read
 * without a lock.
 *
 *   _agent.c: tab_find(key) miss -> agent_intern_*_slow -> names
 *     -> intern_define: under agent.lock, tab_find again, define_locked
 *        (strdef_put: STRING_DEF) and tab_insert
 */
#include "agent.h"

#include <stdlib.h>

#define AGENT_STR_MAX 1024  /* bytes kept of a name or a file in STRING_DEF */
#define AGENT_KIND_IGNORE 0xFF  /* intern_define: map the key to AGENT_IGNORE */

static unsigned varint_len(uint64_t v)
{
	unsigned n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Forgets everything interned by the parent (fork child); leaks the
 * parent's references and table on purpose: freeing them is not needed
 * and the table may have been caught mid-update by the fork. */
void agent_intern_reset(void)
{
	agent.tab = NULL;
	agent.tab_mask = 0;
	agent.tab_count = 0;
	agent.next_id = 1;
	PyDict_Clear(agent.scope_ids);
	PyDict_Clear(agent.mark_ids);
	memset((void *)agent.events, 0, sizeof(agent.events));
}

/* Inserts a key known to be absent; grows at half load.  Caller holds agent.lock. */
static int tab_insert(uintptr_t k1, uintptr_t k2, uint32_t id)
{
	if (2 * (agent.tab_count + 1) > agent.tab_mask + 1 || !agent.tab) {
		uint32_t cap = agent.tab ? 2 * (agent.tab_mask + 1) : 4096;
		struct agent_ient *n = calloc(cap, sizeof(*n));
		if (!n)
			return -1;
		for (uint32_t i = 0; agent.tab && i <= agent.tab_mask; i++) {
			struct agent_ient *e = &agent.tab[i];
			if (!e->k1)
				continue;
			uint32_t j = tab_hash(e->k1, e->k2) & (cap - 1);
			while (n[j].k1)
				j = (j + 1) & (cap - 1);
			n[j] = *e;
		}
		free(agent.tab);
		agent.tab = n;
		agent.tab_mask = cap - 1;
	}
	uint32_t i = tab_hash(k1, k2) & agent.tab_mask;
	while (agent.tab[i].k1)
		i = (i + 1) & agent.tab_mask;
	agent.tab[i] = (struct agent_ient){ k1, k2, id };
	agent.tab_count++;
	return 0;
}

/* UTF-8 bytes of a str (errors escaped), NULL on failure with no error set. */
PyObject *agent_utf8_of(PyObject *s)
{
	PyObject *b = NULL;
	if (s && PyUnicode_Check(s))
		b = PyUnicode_AsEncodedString(s, "utf-8", "backslashreplace");
	if (!b)
		PyErr_Clear();
	return b;
}

void agent_bytes_view(PyObject *b, const char **p, size_t *n)
{
	char *s = NULL;
	Py_ssize_t len = 0;
	*p = "";
	*n = 0;
	if (b && PyBytes_AsStringAndSize(b, &s, &len) == 0) {
		size_t m = (size_t)len;
		if (m > AGENT_STR_MAX) {
			m = AGENT_STR_MAX;
			while (m > 0 && ((uint8_t)s[m] & 0xC0) == 0x80) /* keep whole characters */
				m--;
		}
		*p = s;
		*n = m;
	}
	PyErr_Clear();
}

/*
 * Appends one STRING_DEF to the string area and publishes it.  Caller
 * holds agent.lock.  Returns -1 when the area is full (counted).
 */
static int strdef_put(uint32_t id, uint8_t kind, uint64_t line, const char *name, size_t nlen,
		      const char *file, size_t flen)
{
	uint64_t body = varint_len(id) + 1 + varint_len(line) + varint_len(nlen) + nlen +
			varint_len(flen) + flen;
	uint64_t total = 1 + varint_len(body) + body;
	uint64_t off = atomic_load_explicit(&agent.proc->str_committed, memory_order_relaxed);

	if (off > agent.str_size || total > agent.str_size - off) {
		atomic_fetch_add_explicit(&agent.proc->str_dropped, 1, memory_order_relaxed);
		return -1;
	}
	uint8_t *p = agent.str + off;
	*p++ = ISC_REC_STRING_DEF;
	p += isc_put_varint(p, body);
	p += isc_put_varint(p, id);
	*p++ = kind;
	p += isc_put_varint(p, line);
	p += isc_put_varint(p, nlen);
	memcpy(p, name, nlen);
	p += nlen;
	p += isc_put_varint(p, flen);
	memcpy(p, file, flen);
	atomic_store_explicit(&agent.proc->str_committed, off + total, memory_order_release);
	return 0;
}

/* A definition's name and file as UTF-8, prepared before taking agent.lock
 * (encoding is a Python API call; none is made under the lock). */
struct agent_def {
	PyObject *nb, *fb; /* owned bytes, or NULL */
	const char *name, *file;
	size_t nlen, flen;
	uint64_t line;
};

static void def_prepare(struct agent_def *d, PyObject *name, PyObject *file, long line)
{
	d->nb = agent_utf8_of(name);
	d->fb = agent_utf8_of(file);
	agent_bytes_view(d->nb, &d->name, &d->nlen);
	agent_bytes_view(d->fb, &d->file, &d->flen);
	d->line = line < 0 ? 0 : (uint64_t)line;
}

static void def_release(struct agent_def *d)
{
	Py_DecRef(d->nb);
	Py_DecRef(d->fb);
}

/* Assigns the next id and defines it; 0 when the string area is full.
 * Caller holds agent.lock. */
static uint32_t define_locked(uint8_t kind, const struct agent_def *d)
{
	uint32_t id = agent.next_id;
	if (id >= ISC_STRING_ID_CUDA_BASE) { /* the CUDA agent's ids start there */
		atomic_fetch_add_explicit(&agent.proc->str_dropped, 1, memory_order_relaxed);
		return 0;
	}
	if (strdef_put(id, kind, d->line, d->name, d->nlen, d->file, d->flen) < 0)
		return 0;
	agent.next_id++;
	return id;
}

/*
 * Interns key (k1, k2) with definition d; ref gains a reference owned by
 * the table forever, so the object behind a pointer key can never be freed
 * and its address reused for another.  Re-checks the table: another thread
 * may have interned the key while the caller computed names (attribute
 * lookups can release the GIL).
 */
static uint32_t intern_define(uintptr_t k1, uintptr_t k2, PyObject *ref, uint8_t kind,
			      const struct agent_def *d)
{
	uint32_t id;
	pthread_mutex_lock(&agent.lock);
	struct agent_ient *e = tab_find(k1, k2);
	if (e) {
		id = e->id;
	} else {
		id = (kind == AGENT_KIND_IGNORE) ? AGENT_IGNORE : define_locked(kind, d);
		if (tab_insert(k1, k2, id) == 0)
			Py_IncRef(ref);
	}
	pthread_mutex_unlock(&agent.lock);
	return id;
}

PyObject *agent_getattr_str(PyObject *o, const char *attr)
{
	PyObject *v = PyObject_GetAttrString(o, attr);
	if (v && !PyUnicode_Check(v)) {
		Py_DecRef(v);
		v = NULL;
	}
	if (!v)
		PyErr_Clear();
	return v;
}

uint32_t agent_intern_code_slow(PyObject *code)
{
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	PyObject *name = agent_getattr_str(code, agent.has_qualname ? "co_qualname" : "co_name");
	PyObject *file = agent_getattr_str(code, "co_filename");
	PyObject *lineo = PyObject_GetAttrString(code, "co_firstlineno");
	long line = lineo ? PyLong_AsLong(lineo) : 0;
	PyErr_Clear();
	struct agent_def d;
	def_prepare(&d, name, file, line);
	uint32_t id = intern_define((uintptr_t)code, 0, code, ISC_STR_CODE, &d);
	def_release(&d);
	Py_DecRef(name);
	Py_DecRef(file);
	Py_DecRef(lineo);
	PyErr_Restore(et, ev, tb);
	return id;
}

/* "<prefix>.<name>" or just name when prefix is NULL/empty; new reference. */
static PyObject *qualify(PyObject *prefix, PyObject *name)
{
	if (!name)
		return NULL;
	if (!prefix || PyUnicode_GetLength(prefix) == 0) {
		Py_IncRef(name);
		return name;
	}
	return PyUnicode_FromFormat("%U.%U", prefix, name);
}

/*
 * Name of a builtin_function_or_method: "torch.matmul" (module-level or
 * static: module + name), "Tensor.add" / "list.append" (bound: type of
 * self + name), "dict.fromkeys" (classmethod).  file = module name.
 */
static void cfunc_names(struct agent_cfunc *c, PyObject **name, PyObject **file)
{
	PyObject *self = c->m_self;
	PyObject *base = PyUnicode_FromString(c->m_ml->ml_name);
	PyObject *prefix = NULL;

	if (!self || (c->m_ml->ml_flags & METH_STATIC) || PyModule_Check(self) ||
	    PyCapsule_CheckExact(self)) { /* pybind11 functions carry a capsule as self */
		*file = agent_getattr_str((PyObject *)c, "__module__");
		if (!*file && self && PyModule_Check(self)) {
			*file = PyModule_GetNameObject(self);
			PyErr_Clear();
		}
		prefix = *file;
		Py_IncRef(prefix);
	} else {
		PyObject *tp = PyType_Check(self) ? self : (PyObject *)Py_TYPE(self);
		prefix = agent_getattr_str(tp, "__qualname__");
		*file = agent_getattr_str(tp, "__module__");
	}
	*name = qualify(prefix, base);
	PyErr_Clear();
	Py_DecRef(prefix);
	Py_DecRef(base);
}

/* One of the module's own functions (agent.own: mark, Scope.__exit__), not recorded as a C call? */
static int own_method(const PyMethodDef *ml)
{
	for (int i = 0; i < 2; i++)
		if (ml >= agent.own[i][0] && ml < agent.own[i][1])
			return 1;
	return 0;
}

/* Any other callable: __qualname__ (or __name__, or its type's name)
 * qualified with __module__ when not already dotted. */
static void callable_names(PyObject *f, PyObject **name, PyObject **file)
{
	PyObject *base = agent_getattr_str(f, "__qualname__");
	if (!base)
		base = agent_getattr_str(f, "__name__");
	if (!base)
		base = agent_getattr_str((PyObject *)Py_TYPE(f), "__name__");
	*file = agent_getattr_str(f, "__module__");
	if (base && PyUnicode_FindChar(base, '.', 0, PyUnicode_GetLength(base), 1) < 0) {
		*name = qualify(*file, base);
		Py_DecRef(base);
	} else {
		*name = base;
	}
	PyErr_Clear();
}

uint32_t agent_intern_callable_slow(PyObject *f, uintptr_t k1, uintptr_t k2, PyObject *ref)
{
	PyObject *et, *ev, *tb;
	PyObject *name = NULL, *file = NULL;
	uint8_t kind = ISC_STR_CFUNC;

	PyErr_Fetch(&et, &ev, &tb);
	if (k2 & 1) {
		struct agent_cfunc *c = (struct agent_cfunc *)f;
		if (own_method(c->m_ml))
			kind = AGENT_KIND_IGNORE;
		else
			cfunc_names(c, &name, &file);
	} else {
		callable_names(f, &name, &file);
	}
	struct agent_def d;
	def_prepare(&d, name, file, 0);
	uint32_t id = intern_define(k1, k2, ref, kind, &d);
	def_release(&d);
	Py_DecRef(name);
	Py_DecRef(file);
	PyErr_Restore(et, ev, tb);
	return id;
}

uint32_t agent_intern_descr_slow(PyMethodDef *ml, PyTypeObject *tp)
{
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	uint8_t kind = own_method(ml) ? AGENT_KIND_IGNORE : ISC_STR_CFUNC;
	PyObject *prefix = agent_getattr_str((PyObject *)tp, "__qualname__");
	PyObject *file = agent_getattr_str((PyObject *)tp, "__module__");
	PyObject *base = PyUnicode_FromString(ml->ml_name);
	PyObject *name = qualify(prefix, base);
	PyErr_Clear();
	struct agent_def d;
	def_prepare(&d, name, file, 0);
	uint32_t id = intern_define((uintptr_t)ml, (uintptr_t)tp | 1, (PyObject *)tp, kind, &d);
	def_release(&d);
	Py_DecRef(name);
	Py_DecRef(base);
	Py_DecRef(prefix);
	Py_DecRef(file);
	PyErr_Restore(et, ev, tb);
	return id;
}

uint32_t agent_define_text(uint8_t kind, const char *name, size_t nlen, const char *file, size_t flen, uint64_t line)
{
	struct agent_def d = { NULL, NULL, name, file, nlen, flen, line };
	pthread_mutex_lock(&agent.lock);
	uint32_t id = define_locked(kind, &d);
	pthread_mutex_unlock(&agent.lock);
	return id;
}

/* Id of a scope or mark name, by content; 0 when it could not be defined. */
uint32_t agent_intern_name(PyObject *dict, uint8_t kind, PyObject *name)
{
	PyObject *et, *ev, *tb;
	uint32_t id = 0;

	PyErr_Fetch(&et, &ev, &tb);
	PyObject *s = PyUnicode_Check(name) ? (Py_IncRef(name), name) : PyObject_Str(name);
	if (!s)
		goto out;
	PyObject *v = PyDict_GetItemWithError(dict, s);
	if (v) {
		id = (uint32_t)PyLong_AsUnsignedLong(v);
	} else if (!PyErr_Occurred()) {
		struct agent_def d;
		def_prepare(&d, s, NULL, 0);
		pthread_mutex_lock(&agent.lock);
		id = define_locked(kind, &d);
		pthread_mutex_unlock(&agent.lock);
		def_release(&d);
		PyObject *idobj = PyLong_FromUnsignedLong(id);
		if (idobj)
			PyDict_SetItem(dict, s, idobj);
		Py_DecRef(idobj);
	}
	Py_DecRef(s);
out:
	PyErr_Clear();
	PyErr_Restore(et, ev, tb);
	return id;
}
