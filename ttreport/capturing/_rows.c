/* ttreport.capturing._rows: a batch's rows made, and handed to SQLite as a table, in C.
 *
 * The optional accelerator of the writer (ttreport/capturing/writer.py; ROWS says which route runs, and
 * TTREPORT_PURE=1 picks the pure-Python one, the specification: tests/test_writer_rows.py and
 * tests/test_writer_items.py hold the two reports equal table by table). Two types. Items runs Writer._write's loop
 * over a batch's common records (below, at Items), handing every other record to Writer._item. Feeder:
 *
 *   feeder = Feeder(con)      # con: a sqlite3.Connection; registers the virtual table module "ttreport_rows"
 *   con.execute("CREATE VIRTUAL TABLE temp.op_rows USING ttreport_rows(a, b, c)")
 *   feeder.feed(rows)         # a list of tuples as wide as the table: int, float, str, bytes or None
 *   con.execute("INSERT INTO op_staging SELECT * FROM temp.op_rows")   # SQLite reads them in list order
 *   feeder.feed(None)         # let go of the rows
 *   feeder.feed_spread([(7, (3, 4))])   # (key, values) pairs: the rows (7, 0, 3), (7, 1, 4) of a 3-column table
 *   feeder.feed_joined([(7, ((1, 2), (3, 4)))])   # (key, rows) pairs: the rows (7, 1, 2), (7, 3, 4)
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
#include <structmember.h>
#include <sys/stat.h>

#include "_records.h"

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

/* A row by one column's integer value: a column's rows sorted by (value, row), for `col = ?` (rows_filter). */
typedef struct {
    sqlite3_int64 v;
    Py_ssize_t row;
} Key;

/* The rows fed last, shared by the module (SQLite's) and the Feeder (Python's); freed when both let go. */
typedef struct {
    int refs;
    int closed; /* the connection is closed: the module is gone */
    PyObject *rows; /* strong, or NULL */
    Cell *cells; /* n_rows * width */
    Py_ssize_t n_rows, width;
    Key *keys; /* the rows whose cell in column key_col - 1 is an int, by (value, row); NULL: none made */
    Py_ssize_t n_keys;
    int key_col; /* 0: none */
    int key_all; /* every cell of that column is an int or NULL: the keys find every match */
} Batch;

/* malloc, not PyMem: sqlite3_close may free the last holder without the GIL (the sqlite3 module lets it go there).
 * By then Feeder_dealloc has let go of the rows (batch_clear, with the GIL), so nothing of Python's is left. */
static void batch_clear(Batch *b) {
    free(b->cells);
    b->cells = NULL;
    free(b->keys);
    b->keys = NULL;
    b->n_keys = b->key_col = 0;
    b->n_rows = b->width = 0;
    Py_CLEAR(b->rows);
}

static void batch_release(void *p) {
    Batch *b = p;
    if (--b->refs == 0) {
        free(b->cells);
        free(b->keys);
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
    int keyed; /* the rows of one value of a column: keys[k] while k < k_end */
    Py_ssize_t k, k_end;
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

/* Every row in the list's order, which is the rowid's (rows_rowid), or, for `column = value`, the rows whose cell
 * is that int (the rows fed joined to themselves: a buffer's alloc to its free in the writer's staging rows, where
 * SQLite would otherwise copy them into a table and index it each batch). SQLite checks the constraint again
 * (omit 0): a value or a column that is not all ints scans every row. */
static int rows_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
    (void)vt;
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        if (c->usable && c->op == SQLITE_INDEX_CONSTRAINT_EQ && c->iColumn >= 0) {
            info->aConstraintUsage[i].argvIndex = 1;
            info->idxNum = c->iColumn + 1;
            info->estimatedCost = 10;
            info->estimatedRows = 2;
            return SQLITE_OK;
        }
    }
    if (info->nOrderBy == 1 && info->aOrderBy[0].iColumn == -1 && !info->aOrderBy[0].desc)
        info->orderByConsumed = 1; /* ORDER BY rowid: no sort (the writer's staging rows, in op order) */
    info->estimatedCost = 1e6;
    info->estimatedRows = 1000;
    return SQLITE_OK;
}

static int key_order(const void *a, const void *b) {
    const Key *x = a, *y = b;
    if (x->v != y->v) return x->v < y->v ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

/* b->keys for column col (0-based), made once a feed. malloc, not PyMem: SQLite calls this without the GIL. */
static int make_keys(Batch *b, int col) {
    if (b->key_col == col + 1) return SQLITE_OK;
    free(b->keys);
    b->keys = NULL;
    b->n_keys = b->key_col = 0;
    Key *keys = malloc((b->n_rows ? b->n_rows : 1) * sizeof(Key));
    if (keys == NULL) return SQLITE_NOMEM;
    Py_ssize_t n = 0;
    int all = 1;
    for (Py_ssize_t r = 0; r < b->n_rows; r++) {
        const Cell *c = &b->cells[r * b->width + col];
        if (c->kind == CELL_INT) {
            keys[n].v = c->v.i;
            keys[n++].row = r;
        } else if (c->kind != CELL_NULL) {
            all = 0;
        }
    }
    qsort(keys, n, sizeof(Key), key_order);
    b->keys = keys;
    b->n_keys = n;
    b->key_col = col + 1;
    b->key_all = all;
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
    (void)idx_str;
    RowsCursor *c = (RowsCursor *)cur;
    Batch *b = ((RowsTable *)cur->pVtab)->batch;
    c->row = 0;
    c->keyed = 0;
    if (idx > 0 && argc == 1 && sqlite3_value_type(argv[0]) == SQLITE_INTEGER && b->cells != NULL) {
        int rc = make_keys(b, idx - 1);
        if (rc != SQLITE_OK) return rc;
        if (b->key_all) { /* the first key >= v, then those equal to it */
            sqlite3_int64 v = sqlite3_value_int64(argv[0]);
            Py_ssize_t lo = 0, hi = b->n_keys;
            while (lo < hi) {
                Py_ssize_t mid = lo + (hi - lo) / 2;
                if (b->keys[mid].v < v) lo = mid + 1;
                else hi = mid;
            }
            hi = lo;
            while (hi < b->n_keys && b->keys[hi].v == v) hi++;
            c->keyed = 1;
            c->k = lo;
            c->k_end = hi;
            if (lo < hi) c->row = b->keys[lo].row;
        }
    }
    return SQLITE_OK;
}

static int rows_next(sqlite3_vtab_cursor *cur) {
    RowsCursor *c = (RowsCursor *)cur;
    if (c->keyed) {
        if (++c->k < c->k_end) c->row = ((RowsTable *)cur->pVtab)->batch->keys[c->k].row;
    } else {
        c->row++;
    }
    return SQLITE_OK;
}

static int rows_eof(sqlite3_vtab_cursor *cur) {
    RowsCursor *c = (RowsCursor *)cur;
    if (c->keyed) return c->k >= c->k_end;
    return c->row >= ((RowsTable *)cur->pVtab)->batch->n_rows;
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

/* feed_joined(pairs): (key, rows) pairs as the rows (key, *row) of each of its rows (tuples of one width): an op's
 * buffers rows from its id and the live buffers' tuples (_rows.Items), which every op they outlive shares, without a
 * tuple made a row. */
static PyObject *Feeder_feed_joined(Feeder *self, PyObject *pairs) {
    Batch *b = self->batch;
    if (b->closed) {
        PyErr_SetString(PyExc_ValueError, "Feeder.feed_joined: the connection is closed");
        return NULL;
    }
    batch_clear(b);
    if (!PyList_CheckExact(pairs)) {
        PyErr_SetString(PyExc_TypeError, "Feeder.feed_joined: a list of (key, tuple of rows) pairs");
        return NULL;
    }
    Py_ssize_t n_pairs = PyList_GET_SIZE(pairs), n = 0, width = -1;
    for (Py_ssize_t p = 0; p < n_pairs; p++) {
        PyObject *pair = PyList_GET_ITEM(pairs, p), *each;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyTuple_Check(each = PyTuple_GET_ITEM(pair, 1))) {
            PyErr_Format(PyExc_ValueError, "Feeder.feed_joined: pair %zd is not a (key, tuple of rows) pair", p);
            return NULL;
        }
        for (Py_ssize_t r = 0; r < PyTuple_GET_SIZE(each); r++, n++) {
            PyObject *row = PyTuple_GET_ITEM(each, r);
            if (!PyTuple_Check(row) || (width >= 0 && PyTuple_GET_SIZE(row) != width)) {
                PyErr_Format(PyExc_ValueError, "Feeder.feed_joined: pair %zd's row %zd is not a tuple of %zd values", p,
                             r, width);
                return NULL;
            }
            width = PyTuple_GET_SIZE(row);
        }
    }
    if (n == 0) Py_RETURN_NONE;
    Py_ssize_t w = width + 1;
    if (n > PY_SSIZE_T_MAX / w / (Py_ssize_t)sizeof(Cell)) return PyErr_NoMemory();
    Cell *cells = malloc(n * w * sizeof(Cell)), *c = cells;
    if (cells == NULL) return PyErr_NoMemory();
    for (Py_ssize_t p = 0; p < n_pairs; p++) {
        PyObject *pair = PyList_GET_ITEM(pairs, p), *each = PyTuple_GET_ITEM(pair, 1);
        for (Py_ssize_t r = 0; r < PyTuple_GET_SIZE(each); r++, c += w) {
            PyObject *row = PyTuple_GET_ITEM(each, r);
            int bad = cell_of(PyTuple_GET_ITEM(pair, 0), &c[0]) < 0;
            for (Py_ssize_t i = 0; !bad && i < width; i++) bad = cell_of(PyTuple_GET_ITEM(row, i), &c[1 + i]) < 0;
            if (bad) {
                free(cells);
                return NULL;
            }
        }
    }
    b->rows = Py_NewRef(pairs); /* as feed's: the cells point into its items */
    b->cells = cells;
    b->n_rows = n;
    b->width = w;
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
    {"feed_joined", (PyCFunction)Feeder_feed_joined, METH_O,
     "feed_joined(pairs): (key, rows) pairs as the rows (key, *row) of each of its rows, read next."},
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

/* -- a batch's common records, in C ------------------------------------------------------------------------ */
/* Items.write(batch, b, fallback) runs Writer._write's loop over a batch (writer.py): the common OP, ALLOC, FREE,
 * ROW and PROGRAM records go into b's rows here, exactly as Writer._item puts them, and every other record goes to
 * fallback(item, b) (Writer._item itself), the specification of every case: a new stack, spec or graph, an argument
 * whose text is not cached (floats and lists of numbers and kept tensors are made here each time: put_shown), files,
 * an error, buffer pages, a nested op's L1 buffers (its caller's) or one freed before its op's end, the rarer tags.
 * An op is done here only once every lookup it needs has hit (nothing is changed before), so a miss leaves the whole
 * op to Python. The caches are the writer's own dicts, read and written as Writer._op does. */
typedef struct {
    PyObject_HEAD
    PyObject *stacks, *specs, *spec_of, *texts, *programs, *l1_allocs, *l1_owner, *graph_keys; /* the writer's */
    PyObject *arg_texts, *arg_floor; /* Writer._arg_texts, and Writer._arg_floor: a list of one int */
    int live; /* buffer pages recorded (Writer._live): every OP, ALLOC and FREE goes to Python */
    int graphs; /* device graphs wanted (Writer._graphs): an L1 buffer an op allocates goes to Python */
    PyObject *tensor_arg; /* records.TensorArg */
    PyObject *op_fields, *spec_fields; /* tuples of positions: writer._OP_FIELDS' and _SPEC_FIELDS' */
    Py_ssize_t max_spec_of; /* writer.MAX_SPEC_OF: an op that could fill Writer._spec_of goes to Python */
    Py_ssize_t max_value_chars; /* writer.MAX_VALUE_CHARS: a longer argument text is cut, by Python */
    PyObject *program; /* device_work.Program: a launched program of another type goes to Python */
    Py_ssize_t program_at[5]; /* the positions in a Program of cbs, ranges, name, device_id and cb_base */
    /* The buffers live after each op, kept here from every ALLOC, FREE and OP record (whoever makes its rows) while
     * they come in the order of their seq numbers and buffer ids, each buffer allocated once and freed once: then an
     * op's `buffers` rows are the buffers live when its record comes, exactly what writer._AFTER_OPS' join finds
     * (allocated_seq < end_seq < freed_seq), and write() hands them over (b.rows["buffers"]). Once that order fails
     * (threads interleaving a record's seq and its place in the log) or a batch is lost, `exact` is 0 for good and
     * the join makes them, from the db. */
    PyObject *live_rows; /* buffer id -> (device_id, address, max_size_per_bank, buffer_type, buffer_layout) */
    PyObject *live_now; /* a tuple of live_rows' values, or NULL: made again after a change */
    long long last_seq, last_id;
    int exact;
    int unsorted; /* buffers listed at the capture's start (seq 0) came in another order than their ids' */
} Items;

/* Interned names, made once by the module's init. */
static PyObject *s_alloc, *s_free, *s_rows, *s_staging, *s_allocs, *s_frees, *s_other, *s_tensor_records,
    *s_input_tensors, *s_output_tensors, *s_ok,
    *s_operation_arguments, *s_buffers;
#define N_NAMES 16
static PyObject *positional[N_NAMES]; /* "0", "1", ...: the names of an op's first positional arguments */

typedef struct {
    PyObject *alloc, *free; /* strong: b.alloc and b.free while the loop runs here */
    PyObject *staging, *allocs, *frees, *other, *tensor_records, *input_tensors, *output_tensors,
        *operation_arguments; /* borrowed */
} Slots;

static void Items_dealloc(Items *self) {
    Py_XDECREF(self->stacks);
    Py_XDECREF(self->specs);
    Py_XDECREF(self->spec_of);
    Py_XDECREF(self->texts);
    Py_XDECREF(self->programs);
    Py_XDECREF(self->l1_allocs);
    Py_XDECREF(self->l1_owner);
    Py_XDECREF(self->graph_keys);
    Py_XDECREF(self->arg_texts);
    Py_XDECREF(self->arg_floor);
    Py_XDECREF(self->tensor_arg);
    Py_XDECREF(self->op_fields);
    Py_XDECREF(self->spec_fields);
    Py_XDECREF(self->program);
    Py_XDECREF(self->live_rows);
    Py_XDECREF(self->live_now);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int positions(PyObject *t, const char *what, Py_ssize_t width) {
    if (!PyTuple_CheckExact(t)) {
        PyErr_Format(PyExc_TypeError, "Items: %s is a tuple of positions", what);
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); i++) {
        Py_ssize_t at = PyLong_Check(PyTuple_GET_ITEM(t, i)) ? PyLong_AsSsize_t(PyTuple_GET_ITEM(t, i)) : -1;
        if (at < 0 || at >= width) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "Items: %s holds a position outside its record", what);
            return -1;
        }
    }
    return 0;
}

static int Items_init(Items *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"stacks", "specs", "spec_of", "texts", "programs", "l1_allocs", "l1_owner", "graph_keys",
                            "arg_texts", "arg_floor", "live", "graphs", "tensor_arg", "op_fields", "spec_fields",
                            "max_spec_of", "staging_width", "max_value_chars", "program", "program_fields", NULL};
    PyObject *d[9], *arg_floor, *tensor_arg, *op_fields, *spec_fields, *program, *program_fields;
    int live, graphs;
    Py_ssize_t max_spec_of, staging_width, max_value_chars;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$O!O!O!O!O!O!O!O!O!O!ppO!OOnnnO!O:Items", names, &PyDict_Type,
                                     &d[0], &PyDict_Type, &d[1], &PyDict_Type, &d[2], &PyDict_Type, &d[3],
                                     &PyDict_Type, &d[4], &PyDict_Type, &d[5], &PyDict_Type, &d[6], &PyDict_Type,
                                     &d[7], &PyDict_Type, &d[8], &PyList_Type, &arg_floor, &live, &graphs,
                                     &PyType_Type, &tensor_arg, &op_fields, &spec_fields, &max_spec_of,
                                     &staging_width, &max_value_chars, &PyType_Type, &program, &program_fields))
        return -1;
    if (PyList_GET_SIZE(arg_floor) != 1 || !PyLong_CheckExact(PyList_GET_ITEM(arg_floor, 0))) {
        PyErr_SetString(PyExc_ValueError, "Items: arg_floor is a list of one int");
        return -1;
    }
    if (self->stacks != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Items: already initialised");
        return -1;
    }
    if (positions(op_fields, "op_fields", OP_WIDTH) < 0 || positions(spec_fields, "spec_fields", SPEC_WIDTH) < 0
        || positions(program_fields, "program_fields", PY_SSIZE_T_MAX) < 0)
        return -1;
    if (PyTuple_GET_SIZE(program_fields) != 5 || !PyType_IsSubtype((PyTypeObject *)program, &PyTuple_Type)) {
        PyErr_SetString(PyExc_ValueError, "Items: program is a tuple type, program_fields 5 positions in it");
        return -1;
    }
    /* The staging row (writer._STAGING_COLUMNS): the op's fields, status, stack id, arguments, the tensor's fields
     * with its spec id and file, the alloc and free records, the graph id. */
    Py_ssize_t width = PyTuple_GET_SIZE(op_fields) + 3 + PyTuple_GET_SIZE(spec_fields) + 2 + ALLOC_WIDTH
                       + FREE_WIDTH + 1;
    if (width != staging_width) {
        PyErr_Format(PyExc_ValueError, "Items: a staging row of %zd values made for one of %zd", width, staging_width);
        return -1;
    }
    self->stacks = Py_NewRef(d[0]);
    self->specs = Py_NewRef(d[1]);
    self->spec_of = Py_NewRef(d[2]);
    self->texts = Py_NewRef(d[3]);
    self->programs = Py_NewRef(d[4]);
    self->l1_allocs = Py_NewRef(d[5]);
    self->l1_owner = Py_NewRef(d[6]);
    self->graph_keys = Py_NewRef(d[7]);
    self->arg_texts = Py_NewRef(d[8]);
    self->arg_floor = Py_NewRef(arg_floor);
    self->live = live;
    self->graphs = graphs;
    self->tensor_arg = Py_NewRef(tensor_arg);
    self->op_fields = Py_NewRef(op_fields);
    self->spec_fields = Py_NewRef(spec_fields);
    self->max_spec_of = max_spec_of;
    self->max_value_chars = max_value_chars;
    self->program = Py_NewRef(program);
    for (int i = 0; i < 5; i++) self->program_at[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(program_fields, i));
    if ((self->live_rows = PyDict_New()) == NULL) return -1;
    self->exact = 1;
    self->last_id = -1; /* buffer ids from 0 */
    return 0;
}

/* A list in `rows` by its name (borrowed), or NULL with an error. */
static PyObject *rows_list(PyObject *rows, PyObject *name, int dict) {
    PyObject *v = PyDict_GetItemWithError(rows, name);
    if (v != NULL && (dict ? PyDict_CheckExact(v) : PyList_CheckExact(v))) return v;
    if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "Items.write: b.rows[%R] is not a %s", name,
                                        dict ? "dict" : "list");
    return NULL;
}

/* d.setdefault(key, []).append(value) */
static int append_to(PyObject *d, PyObject *key, PyObject *value) {
    PyObject *list = PyDict_GetItemWithError(d, key);
    if (list == NULL) {
        if (PyErr_Occurred()) return -1;
        PyObject *fresh = PyList_New(0);
        if (fresh == NULL || PyDict_SetItem(d, key, fresh) < 0) {
            Py_XDECREF(fresh);
            return -1;
        }
        Py_DECREF(fresh); /* the dict holds it */
        list = fresh;
    }
    return PyList_Check(list) ? PyList_Append(list, value) : (PyErr_SetString(PyExc_TypeError, "not a list"), -1);
}

static int do_alloc(Items *self, PyObject *item, Slots *st) {
    if (self->live || PyTuple_GET_SIZE(item) != ALLOC_WIDTH) return 0;
    PyObject *by_op = PyTuple_GET_ITEM(item, ALLOC_ALLOCATED_BY_OPERATION_ID);
    if (self->graphs && by_op != Py_None) {
        PyObject *type = PyTuple_GET_ITEM(item, ALLOC_BUFFER_TYPE);
        int overflow;
        if (!PyLong_CheckExact(type)) return 0;
        long number = PyLong_AsLongAndOverflow(type, &overflow);
        if (overflow || (number == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        /* an L1 buffer, in its op's graph if it launches a program: Writer._l1_allocs and _l1_owner (3,900 of a
         * small BERT log's 7,500 ops, its activations in L1, allocate one) */
        if (number == 1 && (append_to(self->l1_allocs, by_op, item) < 0
                            || PyDict_SetItem(self->l1_owner, PyTuple_GET_ITEM(item, ALLOC_BUFFER_ID), by_op) < 0))
            return -1;
    }
    if (st->alloc != Py_None && PyList_Append(st->allocs, st->alloc) < 0) return -1;
    Py_SETREF(st->alloc, Py_NewRef(item));
    return 1;
}

static int do_free(Items *self, PyObject *item, Slots *st) {
    if (self->live || PyDict_GET_SIZE(self->l1_owner) != 0 || PyTuple_GET_SIZE(item) != FREE_WIDTH) return 0;
    if (st->free != Py_None && PyList_Append(st->frees, st->free) < 0) return -1;
    Py_SETREF(st->free, Py_NewRef(item));
    return 1;
}

/* A small growing buffer of ASCII bytes: an op's arguments as JSON. */
typedef struct {
    char *p;
    Py_ssize_t n, cap;
    char local[256];
} Text;

static int text_put(Text *t, const char *s, Py_ssize_t n) {
    if (t->n + n > t->cap) {
        Py_ssize_t cap = (t->n + n) * 2;
        char *p = t->p == t->local ? PyMem_Malloc(cap) : PyMem_Realloc(t->p, cap);
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        if (t->p == t->local) memcpy(p, t->local, t->n);
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->n, s, n);
    t->n += n;
    return 0;
}

/* n in decimal, as int.__repr__ writes it: snprintf's format parsing was ~3 % of Items.write's samples (perf, 300
 * small encoder layers' batches), for a tensor id or an argument's position in nearly every op. */
static int text_int(Text *t, long long n) {
    char digits[24], *p = digits + sizeof(digits);
    unsigned long long u = n < 0 ? 0ULL - (unsigned long long)n : (unsigned long long)n;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (n < 0) *--p = '-';
    return text_put(t, p, digits + sizeof(digits) - p);
}

static void text_free(Text *t) {
    if (t->p != t->local) PyMem_Free(t->p);
}

/* A str of a tensor's kept texts into t when it needs no JSON escape (json's encode_basestring_ascii): 1; else 0. */
static int put_plain(Text *t, PyObject *s) {
    if (s == Py_None) return text_put(t, "None", 4) < 0 ? -1 : 1;
    if (!PyUnicode_CheckExact(s) || !PyUnicode_IS_ASCII(s)) return 0;
    const char *p = (const char *)PyUnicode_1BYTE_DATA(s);
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    for (Py_ssize_t i = 0; i < n; i++)
        if (p[i] < ' ' || p[i] > '~' || p[i] == '"' || p[i] == '\\') return 0;
    return text_put(t, p, n) < 0 ? -1 : 1;
}

/* A tensor's text inside a list (Writer._tensor_text, as writer._render_tensor renders it) from the spec texts
 * Writer._spec_of keeps of it: 1; 0 when Python must make it (not kept: Python looks in the batch and the db; or one of
 * the op's own specs, which Writer._op keeps before it makes its arguments' texts). */
static int tensor_text(Items *self, PyObject *v, Text *t, PyObject *specs) {
    int overflow;
    long long id = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (id == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    for (Py_ssize_t i = 0; specs != Py_None && i < PyTuple_GET_SIZE(specs); i++) {
        PyObject *tid = PyTuple_GET_ITEM(PyTuple_GET_ITEM(specs, i), SPEC_TENSOR_ID); /* checked by do_op */
        long long other = PyLong_AsLongLongAndOverflow(tid, &overflow);
        if (overflow || other == id) {
            PyErr_Clear();
            return 0;
        }
    }
    PyObject *key = PyLong_FromLongLong(id);
    if (key == NULL) return -1;
    PyObject *texts = PyDict_GetItemWithError(self->spec_of, key);
    Py_DECREF(key);
    if (texts == NULL) return PyErr_Occurred() ? -1 : 0;
    if (!PyTuple_CheckExact(texts) || PyTuple_GET_SIZE(texts) != 4) return 0;
    if (text_put(t, "ttnn.Tensor(id=", 15) < 0 || text_int(t, id) < 0) return -1;
    if (PyTuple_GET_ITEM(texts, 1) == Py_None || PyTuple_GET_ITEM(texts, 2) == Py_None)
        return text_put(t, ")", 1) < 0 ? -1 : 1; /* a host tensor's: SQL's || of a NULL is NULL */
    static const char *before[4] = {", shape=", ", dtype=", ", layout=", ", "};
    for (int i = 0; i < 4; i++) {
        if (text_put(t, before[i], (Py_ssize_t)strlen(before[i])) < 0) return -1;
        int ok = put_plain(t, PyTuple_GET_ITEM(texts, i));
        if (ok != 1) return ok;
    }
    return text_put(t, ")", 1) < 0 ? -1 : 1;
}

/* Writer.format_value's text of a float, an int, a bool, None, a tensor (tensor_text), or a list or tuple of them
 * (nested up to `depth`) into t: 1; 0 when anything else is in it (another object's text is its repr). `specs`: the
 * op's. */
static int shown_text(Items *self, PyObject *v, Text *t, int depth, PyObject *specs) {
    PyTypeObject *type = Py_TYPE(v);
    if ((PyObject *)type == self->tensor_arg) return tensor_text(self, v, t, specs);
    if (type == &PyLong_Type) {
        int overflow;
        long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || (n == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        return text_int(t, n) < 0 ? -1 : 1;
    }
    if (type == &PyFloat_Type) { /* float's repr: the shortest text that reads back the same */
        char *r = PyOS_double_to_string(PyFloat_AS_DOUBLE(v), 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
        if (r == NULL) return -1;
        int rc = text_put(t, r, (Py_ssize_t)strlen(r)) < 0 ? -1 : 1;
        PyMem_Free(r);
        return rc;
    }
    if (type == &PyBool_Type) return text_put(t, v == Py_True ? "True" : "False", v == Py_True ? 4 : 5) < 0 ? -1 : 1;
    if (v == Py_None) return text_put(t, "None", 4) < 0 ? -1 : 1;
    int list = type == &PyList_Type;
    if ((!list && type != &PyTuple_Type) || depth == 0) return 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
    int ok = text_put(t, list ? "[" : "(", 1) < 0 ? -1 : 1;
    for (Py_ssize_t i = 0; i < n && ok == 1; i++) {
        if (i > 0 && text_put(t, ", ", 2) < 0) return -1;
        ok = shown_text(self, PySequence_Fast_GET_ITEM(v, i), t, depth - 1, specs);
    }
    if (ok == 1 && !list && n == 1 && text_put(t, ",", 1) < 0) return -1;
    return ok == 1 && text_put(t, list ? "]" : ")", 1) < 0 ? -1 : ok;
}

/* An uncached argument (Writer._argument's float, list or tuple) when shown_text makes its text within
 * MAX_VALUE_CHARS: its JSON string into t (its characters need no escape) and *row its text (a new str): 1; 0 when
 * Python must make them; -1 on an error. 3,600 of a small encoder layer log's 7,500 ops passed one (a reshape's or
 * permute's shape, a slice's bounds, mul's scale), and each such op went whole to Python. */
static int put_shown(Items *self, PyObject *v, Text *t, PyObject **row, PyObject *specs) {
    Text shown = {.p = NULL, .n = 0, .cap = sizeof(shown.local)};
    shown.p = shown.local;
    int ok = shown_text(self, v, &shown, 8, specs);
    if (ok == 1 && shown.n > self->max_value_chars) ok = 0;
    if (ok == 1 && (text_put(t, "\"", 1) < 0 || text_put(t, shown.p, shown.n) < 0 || text_put(t, "\"", 1) < 0))
        ok = -1;
    if (ok == 1) {
        *row = PyUnicode_New(shown.n, 127);
        if (*row == NULL) ok = -1;
        else memcpy(PyUnicode_1BYTE_DATA(*row), shown.p, shown.n);
    }
    text_free(&shown);
    return ok;
}

/* An argument's JSON text (Writer._argument's) into t when Writer._texts holds it or it is a tensor, and *row its
 * operation_arguments text (a new str) or, for a tensor, its id (a new int): 1; 0 when Python must make them; -1 on
 * an error. */
static int put_value(Items *self, PyObject *v, Text *t, PyObject **row, PyObject *specs) {
    PyTypeObject *type = Py_TYPE(v);
    if ((PyObject *)type == self->tensor_arg) { /* int.__repr__ */
        int overflow;
        long long id = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || (id == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        if (text_int(t, id) < 0 || (*row = PyLong_FromLongLong(id)) == NULL) return -1;
        /* its text, made once the op's specs are kept (do_op): what Writer._arg_texts holds must be one */
        PyObject *kept = PyDict_GetItemWithError(self->arg_texts, *row);
        if (kept == NULL && PyErr_Occurred()) return -1;
        if (kept == NULL || PyUnicode_CheckExact(kept) || (PyTuple_CheckExact(kept) && PyTuple_GET_SIZE(kept) == 4))
            return 1;
        Py_CLEAR(*row);
        return 0;
    }
    if (type == &PyFloat_Type || type == &PyList_Type || type == &PyTuple_Type) /* never cached: made each time */
        return put_shown(self, v, t, row, specs);
    int by_value = type == &PyLong_Type || type == &PyBool_Type || type == &PyUnicode_Type || v == Py_None;
    PyObject *key = by_value ? PyTuple_Pack(2, (PyObject *)type, v) : PyLong_FromVoidPtr(v);
    if (key == NULL) return -1;
    PyObject *hit = PyDict_GetItemWithError(self->texts, key);
    Py_DECREF(key);
    if (hit == NULL) return PyErr_Occurred() ? -1 : 0;
    if (!PyTuple_CheckExact(hit) || PyTuple_GET_SIZE(hit) < 3 || (!by_value && PyTuple_GET_ITEM(hit, 1) != v))
        return 0;
    PyObject *text = PyTuple_GET_ITEM(hit, 0);
    if (!PyUnicode_CheckExact(text) || !PyUnicode_IS_ASCII(text) || !PyUnicode_CheckExact(PyTuple_GET_ITEM(hit, 2)))
        return 0;
    if (text_put(t, (const char *)PyUnicode_1BYTE_DATA(text), PyUnicode_GET_LENGTH(text)) < 0) return -1;
    *row = Py_NewRef(PyTuple_GET_ITEM(hit, 2));
    return 1;
}

/* A keyword's JSON string (json's encode_basestring_ascii) when it needs no escape: 1; else 0. */
static int put_key(PyObject *k, Text *t) {
    if (!PyUnicode_CheckExact(k) || !PyUnicode_IS_ASCII(k)) return 0;
    const char *s = (const char *)PyUnicode_1BYTE_DATA(k);
    Py_ssize_t n = PyUnicode_GET_LENGTH(k);
    for (Py_ssize_t i = 0; i < n; i++)
        if (s[i] < ' ' || s[i] > '~' || s[i] == '"' || s[i] == '\\') return 0;
    if (text_put(t, "\"", 1) < 0 || text_put(t, s, n) < 0 || text_put(t, "\":", 2) < 0) return -1;
    return 1;
}

/* One (name, row value) pair of `named` (put_value's *row; the reference is taken). */
static int add_named(PyObject *named, PyObject *name, PyObject *row) {
    PyObject *pair = name != NULL ? PyTuple_Pack(2, name, row) : NULL;
    Py_XDECREF(name);
    Py_DECREF(row);
    int rc = pair == NULL ? -1 : PyList_Append(named, pair);
    Py_XDECREF(pair);
    return rc;
}

/* The op's arguments as Writer._op writes them (*out: a new str, or None), and to `named` each one's name and its row
 * value (put_value's): 1; 0 when Python must; -1 on an error. */
static int arguments(Items *self, PyObject *args, PyObject *kwargs, PyObject **out, PyObject *named, PyObject *specs) {
    int kw = PyObject_IsTrue(kwargs);
    if (kw < 0) return -1;
    if (!PyTuple_CheckExact(args) || (kw && !PyDict_CheckExact(kwargs))) return 0;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (!kw && n == 0) {
        *out = Py_NewRef(Py_None);
        return 1;
    }
    Text t = {.p = NULL, .n = 0, .cap = sizeof(t.local)};
    t.p = t.local;
    int ok = text_put(&t, kw ? "{" : "[", 1) < 0 ? -1 : 1;
    for (Py_ssize_t i = 0; i < n && ok == 1; i++) {
        if (i > 0) ok = text_put(&t, ",", 1) < 0 ? -1 : 1;
        if (ok == 1 && kw) {
            ok = text_put(&t, "\"", 1) < 0 || text_int(&t, i) < 0 || text_put(&t, "\":", 2) < 0 ? -1 : 1;
        }
        PyObject *row = NULL;
        if (ok == 1) ok = put_value(self, PyTuple_GET_ITEM(args, i), &t, &row, specs);
        if (ok == 1 && add_named(named, i < N_NAMES ? Py_NewRef(positional[i]) : PyUnicode_FromFormat("%zd", i), row)
                           < 0)
            ok = -1;
    }
    if (kw) {
        Py_ssize_t pos = 0, i = n;
        PyObject *k, *v;
        while (ok == 1 && PyDict_Next(kwargs, &pos, &k, &v)) {
            if (i++ > 0) ok = text_put(&t, ",", 1) < 0 ? -1 : 1;
            PyObject *row = NULL;
            if (ok == 1) ok = put_key(k, &t);
            if (ok == 1) ok = put_value(self, v, &t, &row, specs);
            if (ok == 1 && add_named(named, Py_NewRef(k), row) < 0) ok = -1;
        }
    }
    if (ok == 1) ok = text_put(&t, kw ? "}" : "]", 1) < 0 ? -1 : 1;
    if (ok == 1) {
        *out = PyUnicode_New(t.n, 127);
        if (*out == NULL) ok = -1;
        else memcpy(PyUnicode_1BYTE_DATA(*out), t.p, t.n);
    }
    text_free(&t);
    return ok;
}

/* The graph id of an op that launched `programs` and allocated the L1 buffers `l1` for its graph (a list of ALLOC
 * records, or NULL: none), when Writer._graph_keys holds its key (Writer._captured_graph's, made the same way): a new
 * reference; NULL and no error on a miss. */
static PyObject *graph_hit(Items *self, PyObject *name, PyObject *programs, PyObject *l1) {
    if (!PyList_CheckExact(programs)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(programs);
    PyObject *each = PyTuple_New(n), *key = NULL, *graph = NULL;
    if (each == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        /* its fields by position, where 5 attribute lookups a program were ~4 % of Items.write's perf samples */
        PyObject *p = PyList_GET_ITEM(programs, i), *part = NULL;
        if (Py_TYPE(p) != (PyTypeObject *)self->program || PyTuple_GET_SIZE(p) <= self->program_at[4]) goto done;
        if ((part = PyTuple_New(5)) == NULL) goto done;
        for (int j = 0; j < 5; j++) {
            PyObject *v = PyTuple_GET_ITEM(p, self->program_at[j]);
            /* id() of the CBs and ranges: the programs are held by the cache */
            PyTuple_SET_ITEM(part, j, j < 2 ? PyLong_FromVoidPtr(v) : Py_NewRef(v));
        }
        if (PyTuple_GET_ITEM(part, 0) == NULL || PyTuple_GET_ITEM(part, 1) == NULL) {
            Py_DECREF(part);
            goto done;
        }
        PyTuple_SET_ITEM(each, i, part);
    }
    /* where each L1 buffer lies (writer._ALLOC_PLACE: its device to its size) */
    Py_ssize_t n_l1 = l1 == NULL ? 0 : PyList_GET_SIZE(l1);
    PyObject *places = PyTuple_New(n_l1);
    for (Py_ssize_t i = 0; places != NULL && i < n_l1; i++) {
        PyObject *a = PyList_GET_ITEM(l1, i);
        PyObject *place = PyTuple_GetSlice(a, ALLOC_DEVICE_ID, ALLOC_SIZE + 1); /* an ALLOC record: do_op */
        if (place == NULL) Py_CLEAR(places);
        else PyTuple_SET_ITEM(places, i, place);
    }
    key = places != NULL ? PyTuple_Pack(3, name, each, places) : NULL;
    Py_XDECREF(places);
    if (key == NULL) goto done;
    PyObject *hit = PyDict_GetItemWithError(self->graph_keys, key);
    if (hit != NULL && PyTuple_CheckExact(hit) && PyTuple_GET_SIZE(hit) >= 1)
        graph = Py_NewRef(PyTuple_GET_ITEM(hit, 0));
done:
    Py_DECREF(each);
    Py_XDECREF(key);
    return graph;
}

/* Fill `row` from `at` (a tuple) with rec's values at the positions `fields`; returns the next free index. */
static Py_ssize_t put_fields(PyObject *row, Py_ssize_t at, PyObject *rec, PyObject *fields) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields); i++)
        PyTuple_SET_ITEM(row, at++, Py_NewRef(PyTuple_GET_ITEM(rec, PyLong_AsSsize_t(PyTuple_GET_ITEM(fields, i)))));
    return at;
}

static Py_ssize_t put_nones(PyObject *row, Py_ssize_t at, Py_ssize_t n) {
    while (n-- > 0) PyTuple_SET_ITEM(row, at++, Py_NewRef(Py_None));
    return at;
}

/* A tensor's row (Writer._tensor_row): its fields, its spec id (hit[0]) and no file. */
static PyObject *tensor_row(Items *self, PyObject *spec, PyObject *hit) {
    PyObject *row = PyTuple_New(PyTuple_GET_SIZE(self->spec_fields) + 2);
    if (row == NULL) return NULL;
    Py_ssize_t at = put_fields(row, 0, spec, self->spec_fields);
    PyTuple_SET_ITEM(row, at, Py_NewRef(PyTuple_GET_ITEM(hit, 0)));
    PyTuple_SET_ITEM(row, at + 1, Py_NewRef(Py_None));
    return row;
}

/* The text of a tensor argument by its id (Writer._argument_text): a new reference to a str, or to None where SQL
 * renders it; NULL on an error. A kept spec's texts (shape, dtype, layout, placement or 'host') are rendered once, as
 * writer._render_tensor does, and kept in their place. */
static PyObject *tensor_shown(Items *self, PyObject *tid) {
    PyObject *kept = PyDict_GetItemWithError(self->arg_texts, tid);
    if (kept == NULL) return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    if (PyUnicode_CheckExact(kept)) return Py_NewRef(kept);
    PyObject *dtype = PyTuple_GET_ITEM(kept, 1), *layout = PyTuple_GET_ITEM(kept, 2); /* a 4-tuple: put_value */
    PyObject *shown = dtype == Py_None || layout == Py_None
                          ? PyUnicode_FromFormat("ttnn.Tensor(id=%S)", tid)
                          : PyUnicode_FromFormat("ttnn.Tensor(id=%S, shape=%S, dtype=%S, layout=%S, %S)", tid,
                                                 PyTuple_GET_ITEM(kept, 0), dtype, layout, PyTuple_GET_ITEM(kept, 3));
    if (shown != NULL && PyDict_SetItem(self->arg_texts, tid, shown) < 0) Py_CLEAR(shown);
    return shown;
}

/* An OP record (Writer._item's and Writer._op's) when each of its lookups hits: 1; 0: Python's; -1: an error. */
static int do_op(Items *self, PyObject *item, Slots *st) {
    if (self->live || PyTuple_GET_SIZE(item) != OP_WIDTH || PyTuple_GET_ITEM(item, OP_ERROR) != Py_None) return 0;
    if ((st->alloc != Py_None && (!PyTuple_CheckExact(st->alloc) || PyTuple_GET_SIZE(st->alloc) != ALLOC_WIDTH))
        || (st->free != Py_None && (!PyTuple_CheckExact(st->free) || PyTuple_GET_SIZE(st->free) != FREE_WIDTH)))
        return 0;
    PyObject *files = PyTuple_GET_ITEM(item, OP_FILES), *specs = PyTuple_GET_ITEM(item, OP_SPECS);
    if (files != Py_None && !(PyTuple_CheckExact(files) && PyTuple_GET_SIZE(files) == 0)) return 0;
    if (specs != Py_None && !PyTuple_CheckExact(specs)) return 0;
    Py_ssize_t n_specs = specs == Py_None ? 0 : PyTuple_GET_SIZE(specs);
    if (PyDict_GET_SIZE(self->spec_of) + n_specs > self->max_spec_of
        || PyDict_GET_SIZE(self->arg_texts) + n_specs > self->max_spec_of)
        return 0; /* Python halves them */
    PyObject *op_id = PyTuple_GET_ITEM(item, OP_OPERATION_ID), *frames = PyTuple_GET_ITEM(item, OP_STACK);
    PyObject *programs = NULL, *l1 = NULL, *graph = NULL, *stack_id = NULL, *hits = NULL, *text = NULL, *row = NULL;
    PyObject *named = NULL;
    int found = 0;
    /* the lookups: nothing is changed until each has hit */
    if (PyDict_GET_SIZE(self->programs) != 0) {
        programs = PyDict_GetItemWithError(self->programs, op_id);
        if (programs == NULL && PyErr_Occurred()) return -1;
    }
    /* the L1 buffers it allocated for its graph (Writer._l1_allocs): a nested op's with no program are its caller's,
     * Python's to move */
    if (PyDict_GET_SIZE(self->l1_allocs) != 0) {
        l1 = PyDict_GetItemWithError(self->l1_allocs, op_id);
        if (l1 == NULL && PyErr_Occurred()) return -1;
        if (l1 != NULL && (!PyList_CheckExact(l1)
                           || (programs == NULL && PyTuple_GET_ITEM(item, OP_PARENT_OPERATION_ID) != Py_None)))
            return 0;
        for (Py_ssize_t i = 0; l1 != NULL && i < PyList_GET_SIZE(l1); i++) {
            PyObject *a = PyList_GET_ITEM(l1, i);
            if (!PyTuple_CheckExact(a) || PyTuple_GET_SIZE(a) != ALLOC_WIDTH) return 0;
        }
    }
    if (programs != NULL) {
        graph = graph_hit(self, PyTuple_GET_ITEM(item, OP_NAME), programs, l1);
        if (graph == NULL) return PyErr_Occurred() ? -1 : 0;
    } else {
        graph = Py_NewRef(Py_None);
    }
    Py_XINCREF(l1); /* held until the end: its entry is deleted below */
    int has_stack = PyObject_IsTrue(frames);
    if (has_stack < 0) goto fail;
    stack_id = has_stack ? PyDict_GetItemWithError(self->stacks, frames) : Py_None;
    if (stack_id == NULL) goto miss;
    Py_INCREF(stack_id); /* held by the row from here */
    hits = PyTuple_New(n_specs);
    if (hits == NULL) goto fail;
    for (Py_ssize_t i = 0; i < n_specs; i++) {
        PyObject *spec = PyTuple_GET_ITEM(specs, i);
        if (!PyTuple_CheckExact(spec) || PyTuple_GET_SIZE(spec) != SPEC_WIDTH
            || !PyLong_CheckExact(PyTuple_GET_ITEM(spec, SPEC_TENSOR_ID)))
            goto miss;
        PyObject *key = PyTuple_GetSlice(spec, SPEC_SHAPE, SPEC_CONFIG_ID + 1); /* (shape, dtype, layout, cfg) */
        if (key == NULL) goto fail;
        PyObject *hit = PyDict_GetItemWithError(self->specs, key);
        Py_DECREF(key);
        if (hit == NULL || !PyTuple_CheckExact(hit) || PyTuple_GET_SIZE(hit) < 3
            || !PyTuple_CheckExact(PyTuple_GET_ITEM(hit, 2)) || PyTuple_GET_SIZE(PyTuple_GET_ITEM(hit, 2)) != 4)
            goto miss;
        PyTuple_SET_ITEM(hits, i, Py_NewRef(hit));
    }
    PyObject *floor = PyList_GET_ITEM(self->arg_floor, 0);
    if (!PyLong_CheckExact(floor) || (named = PyList_New(0)) == NULL) goto miss;
    found = arguments(self, PyTuple_GET_ITEM(item, OP_ARGS), PyTuple_GET_ITEM(item, OP_KWARGS), &text, named, specs);
    if (found != 1) goto end;
    found = -1;
    /* the changes, as Writer._op makes them */
    if (programs != NULL && PyDict_DelItem(self->programs, op_id) < 0) goto end;
    if (l1 != NULL) { /* Writer._captured_graph: its L1 buffers leave the pending ones, and their owners */
        if (PyDict_DelItem(self->l1_allocs, op_id) < 0) goto end;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(l1); i++) {
            PyObject *id = PyTuple_GET_ITEM(PyList_GET_ITEM(l1, i), ALLOC_BUFFER_ID); /* checked above */
            int owned = PyDict_Contains(self->l1_owner, id);
            if (owned < 0 || (owned && PyDict_DelItem(self->l1_owner, id) < 0)) goto end;
        }
    }
    PyObject *tensor = NULL;
    for (Py_ssize_t i = 0; i < n_specs; i++) {
        PyObject *spec = PyTuple_GET_ITEM(specs, i), *hit = PyTuple_GET_ITEM(hits, i);
        PyObject *tid = PyTuple_GET_ITEM(spec, SPEC_TENSOR_ID), *texts = PyTuple_GET_ITEM(hit, 2);
        if (PyDict_SetItem(self->spec_of, tid, texts) < 0) goto end;
        /* Writer._first_spec: kept if the tensor's first spec (none kept, above the floor) */
        int kept = PyDict_Contains(self->arg_texts, tid);
        int above = kept == 0 ? PyObject_RichCompareBool(tid, floor, Py_GT) : 0;
        if (kept < 0 || above < 0 || (above && PyDict_SetItem(self->arg_texts, tid, texts) < 0)) goto end;
        PyObject *t = tensor_row(self, spec, hit);
        if (t == NULL) goto end;
        if (tensor == NULL) { /* the op's row carries one; any others are bound on their own */
            tensor = t;
            continue;
        }
        int rc = PyList_Append(st->tensor_records, t);
        Py_DECREF(t);
        if (rc < 0) goto end;
    }
    PyObject *inputs = PyTuple_GET_ITEM(item, OP_INPUTS), *outputs = PyTuple_GET_ITEM(item, OP_OUTPUTS);
    PyObject *ends[2][2] = {{inputs, st->input_tensors}, {outputs, st->output_tensors}};
    for (int e = 0; e < 2; e++) {
        int any = PyObject_IsTrue(ends[e][0]);
        PyObject *pair = any > 0 ? PyTuple_Pack(2, op_id, ends[e][0]) : NULL;
        int rc = any > 0 ? (pair == NULL ? -1 : PyList_Append(ends[e][1], pair)) : any;
        Py_XDECREF(pair);
        if (rc < 0) {
            Py_XDECREF(tensor);
            goto end;
        }
    }
    /* operation_arguments' rows: (operation_id, name, text, tensor id), a tensor's text from its first spec's */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(named); i++) {
        PyObject *pair = PyList_GET_ITEM(named, i), *name = PyTuple_GET_ITEM(pair, 0), *v = PyTuple_GET_ITEM(pair, 1);
        PyObject *arg, *shown;
        if (PyLong_CheckExact(v)) { /* a tensor's id */
            shown = tensor_shown(self, v);
            arg = shown != NULL ? PyTuple_Pack(4, op_id, name, shown, v) : NULL;
            Py_XDECREF(shown);
        } else { /* the value's text */
            arg = PyTuple_Pack(4, op_id, name, v, Py_None);
        }
        int rc = arg == NULL ? -1 : PyList_Append(st->operation_arguments, arg);
        Py_XDECREF(arg);
        if (rc < 0) {
            Py_XDECREF(tensor);
            goto end;
        }
    }
    row = PyTuple_New(PyTuple_GET_SIZE(self->op_fields) + 3 + PyTuple_GET_SIZE(self->spec_fields) + 2 + ALLOC_WIDTH
                      + FREE_WIDTH + 1);
    if (row == NULL) {
        Py_XDECREF(tensor);
        goto end;
    }
    Py_ssize_t at = put_fields(row, 0, item, self->op_fields);
    PyTuple_SET_ITEM(row, at++, Py_NewRef(s_ok));
    PyTuple_SET_ITEM(row, at++, stack_id); /* its reference */
    PyTuple_SET_ITEM(row, at++, text);
    stack_id = text = NULL;
    if (tensor != NULL) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tensor); i++)
            PyTuple_SET_ITEM(row, at++, Py_NewRef(PyTuple_GET_ITEM(tensor, i)));
        Py_DECREF(tensor);
    } else {
        at = put_nones(row, at, PyTuple_GET_SIZE(self->spec_fields) + 2);
    }
    PyObject *slots[2] = {st->alloc, st->free};
    Py_ssize_t widths[2] = {ALLOC_WIDTH, FREE_WIDTH};
    for (int k = 0; k < 2; k++) {
        if (slots[k] == Py_None) {
            at = put_nones(row, at, widths[k]);
        } else {
            for (Py_ssize_t i = 0; i < widths[k]; i++)
                PyTuple_SET_ITEM(row, at++, Py_NewRef(PyTuple_GET_ITEM(slots[k], i)));
        }
    }
    PyTuple_SET_ITEM(row, at, graph);
    graph = NULL;
    found = PyList_Append(st->staging, row) < 0 ? -1 : 1;
    Py_DECREF(row);
    if (found == 1) {
        Py_SETREF(st->alloc, Py_NewRef(Py_None));
        Py_SETREF(st->free, Py_NewRef(Py_None));
    }
    goto end;
miss:
    found = PyErr_Occurred() ? -1 : 0;
    goto end;
fail:
    found = -1;
end:
    Py_XDECREF(l1);
    Py_XDECREF(stack_id);
    Py_XDECREF(graph);
    Py_XDECREF(hits);
    Py_XDECREF(named);
    Py_XDECREF(text);
    return found;
}

/* b.alloc and b.free from the loop's slots (to_b), or back. */
static int sync_slots(PyObject *b, Slots *st, int to_b) {
    if (to_b) return PyObject_SetAttr(b, s_alloc, st->alloc) < 0 || PyObject_SetAttr(b, s_free, st->free) < 0 ? -1 : 0;
    PyObject *alloc = PyObject_GetAttr(b, s_alloc), *free_ = PyObject_GetAttr(b, s_free);
    if (alloc == NULL || free_ == NULL) {
        Py_XDECREF(alloc);
        Py_XDECREF(free_);
        return -1;
    }
    Py_XSETREF(st->alloc, alloc); /* NULL at the loop's start */
    Py_XSETREF(st->free, free_);
    return 0;
}

/* A record's seq number (or buffer id) as a C integer; -1 if it is not an int in range. */
static long long number_at(PyObject *item, Py_ssize_t at) {
    PyObject *v = PyTuple_GET_ITEM(item, at);
    int overflow;
    long long n = PyLong_CheckExact(v) ? PyLong_AsLongLongAndOverflow(v, &overflow) : -1;
    if (!PyLong_CheckExact(v) || overflow || n < 0) {
        PyErr_Clear();
        return -1;
    }
    return n;
}

/* Items.live_rows in buffer id order (the buffers listed at the capture's start came by allocator). */
static int sort_live(Items *self) {
    PyObject *ids = PyDict_Keys(self->live_rows), *sorted = PyDict_New();
    int rc = ids == NULL || sorted == NULL || PyList_Sort(ids) < 0 ? -1 : 0;
    for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(ids); i++) {
        PyObject *id = PyList_GET_ITEM(ids, i), *where = PyDict_GetItemWithError(self->live_rows, id);
        rc = where == NULL ? -1 : PyDict_SetItem(sorted, id, where);
    }
    Py_XDECREF(ids);
    if (rc == 0) {
        Py_SETREF(self->live_rows, sorted);
        Py_CLEAR(self->live_now);
        self->unsorted = 0;
    } else {
        Py_XDECREF(sorted);
    }
    return rc;
}

/* The live buffers after an ALLOC, FREE or OP record (Items.live_rows); an OP's `buffers` rows into `rows`, as its
 * (operation_id, live buffers' tuples) pair (Feeder.feed_joined's). 0 when the order the rows rely on fails (then
 * exact is 0), -1 on an error. */
static int keep_live(Items *self, long tag, PyObject *item, PyObject *rows) {
    Py_ssize_t size = PyTuple_GET_SIZE(item);
    int start = tag == TAG_ALLOC && size >= ALLOC_WIDTH && number_at(item, ALLOC_ALLOCATED_SEQ) == 0;
    if (!start && self->unsorted && sort_live(self) < 0) return -1;
    if (tag == TAG_ALLOC && size >= ALLOC_WIDTH) {
        long long seq = number_at(item, ALLOC_ALLOCATED_SEQ), id = number_at(item, ALLOC_BUFFER_ID);
        PyObject *key = PyTuple_GET_ITEM(item, ALLOC_BUFFER_ID);
        /* seq 0: allocated before the capture, listed at its start, each allocator's in turn (L1's, DRAM's) */
        if (seq < 0 || id < 0 || (start ? self->last_seq != 0 : seq <= self->last_seq || id <= self->last_id)) return 0;
        int live = PyDict_Contains(self->live_rows, key);
        if (live != 0) return live < 0 ? -1 : 0; /* allocated twice */
        PyObject *where = PyTuple_GetSlice(item, ALLOC_DEVICE_ID, ALLOC_BUFFER_LAYOUT + 1);
        int rc = where == NULL ? -1 : PyDict_SetItem(self->live_rows, key, where);
        Py_XDECREF(where);
        Py_CLEAR(self->live_now);
        self->last_seq = seq;
        self->unsorted |= id < self->last_id;
        if (id > self->last_id) self->last_id = id;
        return rc < 0 ? -1 : 1;
    }
    if (tag == TAG_FREE && size == FREE_WIDTH) {
        long long seq = number_at(item, FREE_FREED_SEQ);
        PyObject *key = PyTuple_GET_ITEM(item, FREE_BUFFER_ID);
        if (seq <= self->last_seq || !PyLong_CheckExact(key)) return 0;
        int live = PyDict_Contains(self->live_rows, key);
        if (live <= 0) return live; /* a buffer not live: freed twice, or never seen allocated */
        self->last_seq = seq;
        Py_CLEAR(self->live_now);
        return PyDict_DelItem(self->live_rows, key) < 0 ? -1 : 1;
    }
    if (tag == TAG_OP && size == OP_WIDTH) {
        long long seq = number_at(item, OP_END_SEQ);
        if (seq <= self->last_seq) return 0;
        self->last_seq = seq;
        if (self->live_now == NULL) { /* in buffer id order: each larger than the last */
            PyObject *values = PyDict_Values(self->live_rows);
            self->live_now = values != NULL ? PyList_AsTuple(values) : NULL;
            Py_XDECREF(values);
            if (self->live_now == NULL) return -1;
        }
        PyObject *pair = PyTuple_Pack(2, PyTuple_GET_ITEM(item, OP_OPERATION_ID), self->live_now);
        int rc = pair == NULL ? -1 : PyList_Append(rows, pair);
        Py_XDECREF(pair);
        return rc < 0 ? -1 : 1;
    }
    return tag == TAG_ALLOC || tag == TAG_FREE || tag == TAG_OP ? 0 : 1; /* a short record of one: Python's to judge */
}

static PyObject *Items_write(Items *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "Items.write(batch, b, fallback)");
        return NULL;
    }
    PyObject *batch = PySequence_Fast(args[0], "Items.write: a batch is a list of records"), *b = args[1];
    if (batch == NULL) return NULL;
    Slots st = {NULL};
    PyObject *rows = PyObject_GetAttr(b, s_rows), *result = NULL, *buffers = NULL;
    st.staging = PyObject_GetAttr(b, s_staging); /* a strong reference, let go at the end */
    if (rows == NULL || st.staging == NULL || !PyDict_CheckExact(rows) || !PyList_CheckExact(st.staging)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "Items.write: b.rows is a dict, b.staging a list");
        goto done;
    }
    if ((st.allocs = rows_list(rows, s_allocs, 0)) == NULL || (st.frees = rows_list(rows, s_frees, 0)) == NULL
        || (st.other = rows_list(rows, s_other, 1)) == NULL
        || (st.tensor_records = rows_list(rows, s_tensor_records, 0)) == NULL
        || (st.input_tensors = rows_list(rows, s_input_tensors, 0)) == NULL
        || (st.output_tensors = rows_list(rows, s_output_tensors, 0)) == NULL
        || (st.operation_arguments = rows_list(rows, s_operation_arguments, 0)) == NULL || sync_slots(b, &st, 0) < 0)
        goto done;
    if (self->exact && (buffers = PyList_New(0)) == NULL) goto done;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(batch); i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(batch, i);
        int done = 0;
        if (PyTuple_CheckExact(item) && PyTuple_GET_SIZE(item) > 0 && PyLong_CheckExact(PyTuple_GET_ITEM(item, 0))) {
            int overflow;
            long tag = PyLong_AsLongAndOverflow(PyTuple_GET_ITEM(item, 0), &overflow);
            Py_ssize_t size = PyTuple_GET_SIZE(item);
            if (overflow) tag = -1;
            if (self->exact && (tag == TAG_ALLOC || tag == TAG_FREE || tag == TAG_OP)) {
                int kept = keep_live(self, tag, item, buffers);
                if (kept < 0) goto done;
                if (kept == 0) self->exact = 0;
            }
            if (tag == TAG_OP) {
                done = do_op(self, item, &st);
            } else if (tag == TAG_ALLOC) {
                done = do_alloc(self, item, &st);
            } else if (tag == TAG_FREE) {
                done = do_free(self, item, &st);
            } else if (tag == TAG_ROW && size == 4) { /* a RowValues: its rows grouped by (table, columns) */
                PyObject *key = PyTuple_Pack(2, PyTuple_GET_ITEM(item, 1), PyTuple_GET_ITEM(item, 2));
                done = key == NULL || append_to(st.other, key, PyTuple_GET_ITEM(item, 3)) < 0 ? -1 : 1;
                Py_XDECREF(key);
            } else if (tag == TAG_ROW && size == 3 && PyDict_CheckExact(PyTuple_GET_ITEM(item, 2))) {
                /* a Row, by its dict: a matmul's device_perf row, estimated on the model's thread (1,800 of a small
                 * encoder layer log's 7,500 ops) */
                PyObject *row = PyTuple_GET_ITEM(item, 2), *names = PyDict_Keys(row), *values = PyDict_Values(row);
                PyObject *cols = names != NULL ? PyList_AsTuple(names) : NULL;
                PyObject *vals = values != NULL ? PyList_AsTuple(values) : NULL;
                PyObject *key = cols != NULL ? PyTuple_Pack(2, PyTuple_GET_ITEM(item, 1), cols) : NULL;
                done = key == NULL || vals == NULL || append_to(st.other, key, vals) < 0 ? -1 : 1;
                Py_XDECREF(names);
                Py_XDECREF(values);
                Py_XDECREF(cols);
                Py_XDECREF(vals);
                Py_XDECREF(key);
            } else if (tag == TAG_PROGRAM && size >= 3) { /* records.ProgramRun: its program kept for its op */
                done = append_to(self->programs, PyTuple_GET_ITEM(item, PROGRAM_OPERATION_ID),
                                 PyTuple_GET_ITEM(item, 2)) < 0 ? -1 : 1;
            }
        }
        if (done < 0) goto done;
        if (done == 0) {
            if (sync_slots(b, &st, 1) < 0) goto done;
            PyObject *r = PyObject_CallFunctionObjArgs(args[2], item, b, NULL);
            if (r == NULL) goto done;
            Py_DECREF(r);
            if (sync_slots(b, &st, 0) < 0) goto done;
        }
    }
    if (sync_slots(b, &st, 1) == 0 && (!self->exact || PyDict_SetItem(rows, s_buffers, buffers) == 0))
        result = Py_NewRef(Py_None);
done:
    Py_XDECREF(buffers);
    Py_DECREF(batch);
    Py_XDECREF(rows);
    Py_XDECREF(st.staging);
    Py_XDECREF(st.alloc);
    Py_XDECREF(st.free);
    return result;
}

static PyMemberDef Items_members[] = {
    {"exact", T_INT, offsetof(Items, exact), 0,
     "1 while write() hands over each op's buffers rows (b.rows['buffers']); set to 0 for good when a batch is lost."},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef Items_methods[] = {
    {"write", (PyCFunction)(void (*)(void))Items_write, METH_FASTCALL,
     "write(batch, b, fallback): the batch's records into b's rows, each record C does not do by fallback(item, b)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ItemsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ttreport.capturing._rows.Items",
    .tp_basicsize = sizeof(Items),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Items(*, stacks, specs, ...): Writer._write's loop over a batch's common records (writer.py).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Items_init,
    .tp_dealloc = (destructor)Items_dealloc,
    .tp_methods = Items_methods,
    .tp_members = Items_members,
};

static struct PyModuleDef rows_def = {
    PyModuleDef_HEAD_INIT, "_rows", "A batch's rows as a SQLite virtual table (see writer.py).", -1, NULL,
};

PyMODINIT_FUNC PyInit__rows(void) {
    if (PyType_Ready(&FeederType) < 0 || PyType_Ready(&ItemsType) < 0) return NULL;
    struct { PyObject **at; const char *text; } names[] = {
        {&s_alloc, "alloc"}, {&s_free, "free"}, {&s_rows, "rows"}, {&s_staging, "staging"}, {&s_allocs, "allocs"},
        {&s_frees, "frees"}, {&s_other, "other"}, {&s_tensor_records, "tensor_records"},
        {&s_input_tensors, "input_tensors"}, {&s_output_tensors, "output_tensors"},
        {&s_ok, "ok"}, {&s_operation_arguments, "operation_arguments"}, {&s_buffers, "buffers"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (*names[i].at == NULL && (*names[i].at = PyUnicode_InternFromString(names[i].text)) == NULL) return NULL;
    for (int i = 0; i < N_NAMES; i++)
        if (positional[i] == NULL && (positional[i] = PyUnicode_FromFormat("%d", i)) == NULL) return NULL;
    PyObject *m = PyModule_Create(&rows_def);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Feeder", (PyObject *)&FeederType) < 0
        || PyModule_AddObjectRef(m, "Items", (PyObject *)&ItemsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
