# Compile-time declarations for the Cython build (see setup.py and model.pxd); the .py beside this
# file is the source and runs as it is without them. endpoint and decimal_text are cpdef: the views call them in C.

cimport cython

cdef extern from *:
    """
    /* table[number] for an int (not a bool) from 0 to len(table) - 1; None for any other object. */
    static inline PyObject *dissect_table_text(PyObject *number, PyObject *table) {
        Py_ssize_t value;
        PyObject *text = Py_None;
        if (PyLong_CheckExact(number)) {
            value = PyLong_AsSsize_t(number);
            if (value == -1 && PyErr_Occurred())
                PyErr_Clear();  /* beyond a C integer: not in the table */
            else if (value >= 0 && value < PyList_GET_SIZE(table))
                text = PyList_GET_ITEM(table, value);
        }
        Py_INCREF(text);
        return text;
    }
    """
    object _table_text "dissect_table_text" (object number, list table)

cdef list DECIMALS
cdef bint _COMPILED
@cython.locals(text=str)
cpdef str decimal_text(number)

@cython.locals(ports=dict)
cpdef endpoint(ip, port)
cdef Py_ssize_t ENDPOINT_TEXTS, _kept
cdef dict _TEXTS
