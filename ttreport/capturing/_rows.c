/* ttreport.capturing._rows: a batch's rows handed to SQLite as a table, in C.
 *
 * The optional accelerator of the writer's staging insert (ttreport/capturing/writer.py; ROWS says which route
 * runs, and TTREPORT_PURE=1 picks executemany, the specification: tests/test_capture_process_writer.py holds the
 * two reports equal row for row). One type:
 *
 *   feeder = Feeder(con)      # con: a sqlite3.Connection; registers the virtual table module "ttreport_rows"
 *   con.execute("CREATE VIRTUAL TABLE temp.op_rows USING ttreport_rows(a, b, c)")
 *   feeder.feed(rows)         # a list of tuples as wide as the table: int, float, str, bytes or None
 *   con.execute("INSERT INTO op_staging SELECT * FROM temp.op_rows")   # SQLite reads them in list order
 *   feeder.feed(None)         # let go of the rows
 *   feeder.feed_spread([(7, (3, 4))])   # (key, values) pairs: the rows (7, 0, 3), (7, 1, 4) of a 3-column table
 *
 * Why C: executemany runs its INSERT once per row (a row of 38 values bound one by one from Python, then the
 * statement's cursors opened, stepped and reset), ~4.5 us an op of the writer process (bench/README.md, issue 33);
 * INSERT ... SELECT over a virtual table runs one statement a batch, as SQLite alone copies a report's rows.
 * feed() reads each value once, holding the GIL, into a plain array that SQLite's callbacks read without it
 * (the sqlite3 module lets go of the GIL while a statement steps); the strs and bytes stay the list's, held
 * until the next feed().
 *
 * The sqlite3 module gives no public handle of a connection's database: the handle is the first field of its
 * object (CPython's Modules/_sqlite/connection.h, 3.7 to 3.13), and Feeder checks it before using it: the
 * object's type is sqlite3.Connection's own, the handle's file is the one given (the same inode), and the module
 * runs the same SQLite as this one (a function registered here answers the module's query, with its version).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#if PY_VERSION_HEX < 0x03070000 || PY_VERSION_HEX >= 0x030E0000
#error "pysqlite_Connection's layout is known for CPython 3.7 to 3.13 only"
#endif

typedef struct {
    PyObject_HEAD
    sqlite3 *db;
} ConnectionHead; /* pysqlite_Connection's start */

enum { CELL_NULL, CELL_INT, CELL_FLOAT, CELL_TEXT, CELL_BLOB };
typedef struct {
    int kind;
    int n; /* bytes of text or blob */
    union {
        sqlite3_int64 i;
        double d;
        const char *p; /* inside a str or bytes of `rows` */
    } v;
} Cell;

/* The rows fed last, shared by the module (SQLite's) and the Feeder (Python's); freed when both let go. */
typedef struct {
    int refs;
    int closed; /* the connection is closed: the module is gone */
    PyObject *rows; /* strong, or NULL */
    Cell *cells; /* n_rows * width */
    Py_ssize_t n_rows, width;
} Batch;

/* malloc, not PyMem: sqlite3_close may free the last holder without the GIL (the sqlite3 module lets it go there).
 * By then Feeder_dealloc has let go of the rows (batch_clear, with the GIL), so nothing of Python's is left. */
static void batch_clear(Batch *b) {
    free(b->cells);
    b->cells = NULL;
    b->n_rows = b->width = 0;
    Py_CLEAR(b->rows);
}

static void batch_release(void *p) {
    Batch *b = p;
    if (--b->refs == 0) {
        free(b->cells);
        free(b);
    }
}

static void module_gone(void *p) {
    ((Batch *)p)->closed = 1;
    batch_release(p);
}

/* -- the virtual table ----------------------------------------------------------------------------------- */
typedef struct {
    sqlite3_vtab base;
    Batch *batch;
    int width; /* its columns */
} RowsTable;

typedef struct {
    sqlite3_vtab_cursor base;
    Py_ssize_t row;
} RowsCursor;

static int rows_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                        char **err) {
    /* argv: module, database, table name, then the columns' names */
    int width = argc - 3;
    if (width < 1) {
        *err = sqlite3_mprintf("ttreport_rows: name the table's columns");
        return SQLITE_ERROR;
    }
    sqlite3_str *ddl = sqlite3_str_new(db);
    sqlite3_str_appendall(ddl, "CREATE TABLE x(");
    for (int i = 0; i < width; i++) sqlite3_str_appendf(ddl, "%s%s", i ? ", " : "", argv[3 + i]);
    sqlite3_str_appendall(ddl, ")");
    char *sql = sqlite3_str_finish(ddl);
    if (sql == NULL) return SQLITE_NOMEM;
    int rc = sqlite3_declare_vtab(db, sql);
    sqlite3_free(sql);
    if (rc != SQLITE_OK) return rc;
    RowsTable *t = sqlite3_malloc(sizeof(RowsTable));
    if (t == NULL) return SQLITE_NOMEM;
    memset(t, 0, sizeof(*t));
    t->batch = aux;
    t->width = width;
    *out = &t->base;
    return SQLITE_OK;
}

static int rows_disconnect(sqlite3_vtab *vt) {
    sqlite3_free(vt);
    return SQLITE_OK;
}

static int rows_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
    (void)vt;
    (void)info; /* no constraint is used: every row, in the list's order */
    info->estimatedCost = 1e6;
    info->estimatedRows = 1000;
    return SQLITE_OK;
}

static int rows_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
    RowsTable *t = (RowsTable *)vt;
    if (t->batch->cells != NULL && t->batch->width != t->width) {
        vt->zErrMsg = sqlite3_mprintf("ttreport_rows: rows of %d values fed to a table of %d columns",
                                      (int)t->batch->width, t->width);
        return SQLITE_ERROR;
    }
    RowsCursor *c = sqlite3_malloc(sizeof(RowsCursor));
    if (c == NULL) return SQLITE_NOMEM;
    memset(c, 0, sizeof(*c));
    *out = &c->base;
    return SQLITE_OK;
}

static int rows_close(sqlite3_vtab_cursor *cur) {
    sqlite3_free(cur);
    return SQLITE_OK;
}

static int rows_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc, sqlite3_value **argv) {
    (void)idx;
    (void)idx_str;
    (void)argc;
    (void)argv;
    ((RowsCursor *)cur)->row = 0;
    return SQLITE_OK;
}

static int rows_next(sqlite3_vtab_cursor *cur) {
    ((RowsCursor *)cur)->row++;
    return SQLITE_OK;
}

static int rows_eof(sqlite3_vtab_cursor *cur) {
    RowsTable *t = (RowsTable *)cur->pVtab;
    return ((RowsCursor *)cur)->row >= t->batch->n_rows;
}

static int rows_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
    RowsTable *t = (RowsTable *)cur->pVtab;
    const Cell *c = &t->batch->cells[((RowsCursor *)cur)->row * t->width + col];
    switch (c->kind) {
    case CELL_INT: sqlite3_result_int64(ctx, c->v.i); break;
    case CELL_FLOAT: sqlite3_result_double(ctx, c->v.d); break;
    /* SQLITE_STATIC: the bytes are the fed list's, held until the next feed(), after this statement */
    case CELL_TEXT: sqlite3_result_text(ctx, c->v.p, c->n, SQLITE_STATIC); break;
    case CELL_BLOB: sqlite3_result_blob(ctx, c->v.p, c->n, SQLITE_STATIC); break;
    default: sqlite3_result_null(ctx);
    }
    return SQLITE_OK;
}

static int rows_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *out) {
    *out = ((RowsCursor *)cur)->row + 1;
    return SQLITE_OK;
}

static sqlite3_module rows_module = {
    .iVersion = 0,
    .xCreate = rows_connect,
    .xConnect = rows_connect,
    .xBestIndex = rows_best_index,
    .xDisconnect = rows_disconnect,
    .xDestroy = rows_disconnect,
    .xOpen = rows_open,
    .xClose = rows_close,
    .xFilter = rows_filter,
    .xNext = rows_next,
    .xEof = rows_eof,
    .xColumn = rows_column,
    .xRowid = rows_rowid,
};

/* -- the Python side ------------------------------------------------------------------------------------- */
typedef struct {
    PyObject_HEAD
    PyObject *con; /* strong: the connection stays open while its Feeder may feed it */
    Batch *batch;
} Feeder;

static int cell_of(PyObject *v, Cell *c) {
    if (v == Py_None) {
        c->kind = CELL_NULL;
    } else if (PyLong_Check(v)) { /* bool included, as the sqlite3 module binds it */
        int overflow;
        c->v.i = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow) {
            PyErr_SetString(PyExc_OverflowError, "Python int too large to convert to SQLite INTEGER");
            return -1;
        }
        if (c->v.i == -1 && PyErr_Occurred()) return -1;
        c->kind = CELL_INT;
    } else if (PyFloat_Check(v)) {
        c->kind = CELL_FLOAT;
        c->v.d = PyFloat_AS_DOUBLE(v);
    } else if (PyUnicode_Check(v)) {
        Py_ssize_t n;
        c->v.p = PyUnicode_AsUTF8AndSize(v, &n); /* kept by the str itself */
        if (c->v.p == NULL) return -1;
        if (n > INT_MAX) {
            PyErr_SetString(PyExc_OverflowError, "string longer than INT_MAX bytes");
            return -1;
        }
        c->kind = CELL_TEXT;
        c->n = (int)n;
    } else if (PyBytes_Check(v)) {
        if (PyBytes_GET_SIZE(v) > INT_MAX) {
            PyErr_SetString(PyExc_OverflowError, "BLOB longer than INT_MAX bytes");
            return -1;
        }
        c->kind = CELL_BLOB;
        c->v.p = PyBytes_AS_STRING(v);
        c->n = (int)PyBytes_GET_SIZE(v);
    } else {
        PyErr_Format(PyExc_TypeError, "ttreport_rows: a value of type %.100s", Py_TYPE(v)->tp_name);
        return -1;
    }
    return 0;
}

static PyObject *Feeder_feed(Feeder *self, PyObject *rows) {
    Batch *b = self->batch;
    if (b->closed) {
        PyErr_SetString(PyExc_ValueError, "Feeder.feed: the connection is closed");
        return NULL;
    }
    batch_clear(b);
    if (rows == Py_None) Py_RETURN_NONE;
    if (!PyList_CheckExact(rows)) {
        PyErr_SetString(PyExc_TypeError, "Feeder.feed: a list of tuples, or None");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(rows);
    if (n == 0) Py_RETURN_NONE;
    PyObject *first = PyList_GET_ITEM(rows, 0);
    if (!PyTuple_Check(first) || PyTuple_GET_SIZE(first) == 0) {
        PyErr_SetString(PyExc_TypeError, "Feeder.feed: rows are non-empty tuples");
        return NULL;
    }
    Py_ssize_t width = PyTuple_GET_SIZE(first);
    if (n > PY_SSIZE_T_MAX / width / (Py_ssize_t)sizeof(Cell)) return PyErr_NoMemory();
    Cell *cells = malloc(n * width * sizeof(Cell));
    if (cells == NULL) return PyErr_NoMemory();
    for (Py_ssize_t r = 0; r < n; r++) {
        PyObject *row = PyList_GET_ITEM(rows, r);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != width) {
            free(cells);
            PyErr_Format(PyExc_ValueError, "Feeder.feed: row %zd is not a tuple of %zd values", r, width);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < width; i++) {
            if (cell_of(PyTuple_GET_ITEM(row, i), &cells[r * width + i]) < 0) {
                free(cells);
                return NULL;
            }
        }
    }
    /* The list is held as it is: a caller that changed it now would change nothing fed (the cells point into
     * its items, which a tuple holds). */
    b->rows = Py_NewRef(rows);
    b->cells = cells;
    b->n_rows = n;
    b->width = width;
    Py_RETURN_NONE;
}

/* feed_spread(pairs): (key, values) pairs as the rows (key, i, values[i]) of a 3-column table, i from 0: an op's
 * input_tensors and output_tensors rows from its (operation_id, tensor ids) without a tuple made a row in Python
 * (nor a JSON array spread by json_each in SQL: 1.9 us an op of both, bench/README.md issue 33, cwriter3). */
static PyObject *Feeder_feed_spread(Feeder *self, PyObject *pairs) {
    Batch *b = self->batch;
    if (b->closed) {
        PyErr_SetString(PyExc_ValueError, "Feeder.feed_spread: the connection is closed");
        return NULL;
    }
    batch_clear(b);
    if (!PyList_CheckExact(pairs)) {
        PyErr_SetString(PyExc_TypeError, "Feeder.feed_spread: a list of (key, tuple of values) pairs");
        return NULL;
    }
    Py_ssize_t n_pairs = PyList_GET_SIZE(pairs), n = 0;
    for (Py_ssize_t p = 0; p < n_pairs; p++) {
        PyObject *pair = PyList_GET_ITEM(pairs, p);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyTuple_Check(PyTuple_GET_ITEM(pair, 1))) {
            PyErr_Format(PyExc_ValueError, "Feeder.feed_spread: pair %zd is not a (key, tuple of values) pair", p);
            return NULL;
        }
        n += PyTuple_GET_SIZE(PyTuple_GET_ITEM(pair, 1));
    }
    if (n == 0) Py_RETURN_NONE;
    if (n > PY_SSIZE_T_MAX / 3 / (Py_ssize_t)sizeof(Cell)) return PyErr_NoMemory();
    Cell *cells = malloc(n * 3 * sizeof(Cell)), *c = cells;
    if (cells == NULL) return PyErr_NoMemory();
    for (Py_ssize_t p = 0; p < n_pairs; p++) {
        PyObject *pair = PyList_GET_ITEM(pairs, p), *values = PyTuple_GET_ITEM(pair, 1);
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(values); i++, c += 3) {
            if (cell_of(PyTuple_GET_ITEM(pair, 0), &c[0]) < 0 || cell_of(PyTuple_GET_ITEM(values, i), &c[2]) < 0) {
                free(cells);
                return NULL;
            }
            c[1].kind = CELL_INT;
            c[1].v.i = i;
        }
    }
    b->rows = Py_NewRef(pairs); /* as feed's: the cells point into its items */
    b->cells = cells;
    b->n_rows = n;
    b->width = 3;
    Py_RETURN_NONE;
}

static void probe(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    (void)argv;
    sqlite3_result_int64(ctx, (sqlite3_int64)sqlite3_libversion_number());
}

static int sqlite3_library_matches(PyObject *con, sqlite3 *db) {
    if (sqlite3_create_function_v2(db, "ttreport_rows_probe", 0, SQLITE_UTF8, NULL, probe, NULL, NULL, NULL)
        != SQLITE_OK) {
        PyErr_Format(PyExc_RuntimeError, "Feeder: %s", sqlite3_errmsg(db));
        return 0;
    }
    PyObject *cur = PyObject_CallMethod(con, "execute", "s", "SELECT ttreport_rows_probe(), sqlite_version()");
    PyObject *row = cur != NULL ? PyObject_CallMethod(cur, "fetchone", NULL) : NULL;
    Py_XDECREF(cur);
    sqlite3_create_function_v2(db, "ttreport_rows_probe", 0, SQLITE_UTF8, NULL, NULL, NULL, NULL, NULL);
    if (row == NULL) return 0;
    const char *version = PyTuple_Check(row) && PyTuple_GET_SIZE(row) == 2 && PyUnicode_Check(PyTuple_GET_ITEM(row, 1))
                              ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(row, 1)) : NULL;
    int ok = version != NULL && strcmp(version, sqlite3_libversion()) == 0
             && PyLong_AsLongLong(PyTuple_GET_ITEM(row, 0)) == sqlite3_libversion_number();
    Py_DECREF(row);
    if (PyErr_Occurred()) return 0;
    if (!ok) PyErr_SetString(PyExc_RuntimeError, "Feeder: the sqlite3 module runs another SQLite than this one");
    return ok;
}

static int Feeder_init(Feeder *self, PyObject *args, PyObject *kwargs) {
    PyObject *con, *connection_type;
    const char *path;
    static char *names[] = {"con", "path", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Os:Feeder", names, &con, &path)) return -1;
    if (self->batch != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Feeder: already initialised");
        return -1;
    }
    PyObject *module = PyImport_ImportModule("sqlite3");
    if (module == NULL) return -1;
    connection_type = PyObject_GetAttrString(module, "Connection");
    Py_DECREF(module);
    if (connection_type == NULL) return -1;
    int exact = (PyObject *)Py_TYPE(con) == connection_type;
    Py_DECREF(connection_type);
    if (!exact) {
        PyErr_SetString(PyExc_TypeError, "Feeder: a sqlite3.Connection itself (not a subclass)");
        return -1;
    }
    sqlite3 *db = ((ConnectionHead *)con)->db;
    const char *file = db != NULL ? sqlite3_db_filename(db, "main") : NULL;
    if (file == NULL) {
        PyErr_SetString(PyExc_ValueError, "Feeder: the connection is closed");
        return -1;
    }
    struct stat a, b_;
    if (stat(path, &a) != 0 || stat(file, &b_) != 0 || a.st_dev != b_.st_dev || a.st_ino != b_.st_ino) {
        PyErr_Format(PyExc_ValueError, "Feeder: the connection's database is %s, not %s", file, path);
        return -1;
    }
    /* The same SQLite as the sqlite3 module's (the shared library both link): the same version, and a function
     * registered here through this handle is one that the module's statements call. */
    if (!sqlite3_library_matches(con, db)) return -1;
    Batch *b = calloc(1, sizeof(Batch));
    if (b == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->refs = 2; /* the module's and this Feeder's */
    if (sqlite3_create_module_v2(db, "ttreport_rows", &rows_module, b, module_gone) != SQLITE_OK) {
        /* sqlite3_create_module_v2 calls module_gone on failure: the module's reference is let go there */
        free(b);
        PyErr_Format(PyExc_RuntimeError, "Feeder: %s", sqlite3_errmsg(db));
        return -1;
    }
    self->batch = b;
    self->con = Py_NewRef(con);
    return 0;
}

static void Feeder_dealloc(Feeder *self) {
    if (self->batch != NULL) {
        batch_clear(self->batch); /* the rows, with the GIL: the module may outlive this Feeder */
        batch_release(self->batch);
    }
    Py_XDECREF(self->con);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Feeder_methods[] = {
    {"feed", (PyCFunction)Feeder_feed, METH_O,
     "feed(rows): the rows the ttreport_rows tables read next (a list of equal-width tuples), or None."},
    {"feed_spread", (PyCFunction)Feeder_feed_spread, METH_O,
     "feed_spread(pairs): (key, values) pairs as the rows (key, i, values[i]) a 3-column table reads next."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject FeederType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ttreport.capturing._rows.Feeder",
    .tp_basicsize = sizeof(Feeder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Feeder(con, path): the ttreport_rows virtual tables of the connection `con` to the file `path`.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Feeder_init,
    .tp_dealloc = (destructor)Feeder_dealloc,
    .tp_methods = Feeder_methods,
};

static struct PyModuleDef rows_def = {
    PyModuleDef_HEAD_INIT, "_rows", "A batch's rows as a SQLite virtual table (see writer.py).", -1, NULL,
};

PyMODINIT_FUNC PyInit__rows(void) {
    if (PyType_Ready(&FeederType) < 0) return NULL;
    PyObject *m = PyModule_Create(&rows_def);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Feeder", (PyObject *)&FeederType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
