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

    /* The digits of a number in a base of 10 or 16, at least ``width`` of them (zeros before), written backwards
       from ``end``: their start. */
    static inline char *dissect_digits_back(char *end, unsigned long long number, unsigned base, int width) {
        static const char digits[] = "0123456789abcdef";
        char *out = end;
        do {
            *--out = digits[number % base];
            number /= base;
        } while (number);
        while (end - out < width)
            *--out = '0';
        return out;
    }

    /* How many decimal digits ``number`` has. */
    static inline int dissect_decimal_size(unsigned long long number) {
        int size = 1;
        while (number >= 10000) {
            number /= 10000;
            size += 4;
        }
        return size + (number >= 10) + (number >= 100) + (number >= 1000);
    }

    /* The two digits of 0 to 99, at 2 * n. */
    static const char dissect_pairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";

    /* The digits of a ``number`` below 10000 written from ``out``: how many. Most numbers the views write are
       offsets, lengths and small values, and the general case (counting the digits, then writing them two at a
       time) takes twice as long for them. */
    static inline int dissect_small_decimal(char *out, unsigned number) {
        if (number < 10) {
            out[0] = (char)('0' + number);
            return 1;
        }
        if (number < 100) {
            memcpy(out, dissect_pairs + 2 * number, 2);
            return 2;
        }
        if (number < 1000) {
            out[0] = (char)('0' + number / 100);
            memcpy(out + 1, dissect_pairs + 2 * (number % 100), 2);
            return 3;
        }
        memcpy(out, dissect_pairs + 2 * (number / 100), 2);
        memcpy(out + 2, dissect_pairs + 2 * (number % 100), 2);
        return 4;
    }

    /* An IPv4 address's dotted quad, a.b.c.d, of its four bytes ``quad``, written from ``out``: how many characters
       (7 to 15). The packet decoder's addresses and Odamex's master list entries. */
    static inline int dissect_dotted_quad_at(char *out, const unsigned char *quad) {
        int size = dissect_small_decimal(out, quad[0]), index;
        for (index = 1; index < 4; index++) {
            out[size++] = '.';
            size += dissect_small_decimal(out + size, quad[index]);
        }
        return size;
    }

    /* The decimal digits of ``number``, exactly ``size`` of them (dissect_decimal_size), written backwards from
       ``end`` two at a time. */
    static inline void dissect_decimal_back(char *end, unsigned long long number, int size) {
        const char *pairs = dissect_pairs;
        while (size >= 2) {
            unsigned pair = (unsigned)(number % 100);
            number /= 100;
            end -= 2;
            end[0] = pairs[2 * pair];
            end[1] = pairs[2 * pair + 1];
            size -= 2;
        }
        if (size)
            *--end = (char)('0' + number);
    }

    /* An int's value where CPython keeps it in one digit (its "compact" ints: below 2**30 in magnitude with its
       30-bit digits): 1 and the value; 0 for any other int. Read in place: the views write a million offsets and
       lengths, and the generic conversion costs more than writing their digits. */
    static inline int dissect_compact_int(PyObject *number, long long *value) {
    #if PY_VERSION_HEX >= 0x030C0000
        if (!PyUnstable_Long_IsCompact((PyLongObject *)number))
            return 0;
        *value = (long long)PyUnstable_Long_CompactValue((PyLongObject *)number);
        return 1;
    #else
        Py_ssize_t size = Py_SIZE(number);
        if (size < -1 || size > 1)
            return 0;
        *value = size * (long long)((PyLongObject *)number)->ob_digit[0];
        return 1;
    #endif
    }

    /* An int's value from -2**63 to 2**64 - 1 as its sign and magnitude: 1; 0 beyond (or not an int). */
    static inline int dissect_magnitude(PyObject *number, unsigned long long *magnitude, int *negative) {
        int overflow;
        long long value;
        if (!PyLong_CheckExact(number))
            return 0;
        if (dissect_compact_int(number, &value)) {
            *negative = value < 0;
            *magnitude = value < 0 ? 0ULL - (unsigned long long)value : (unsigned long long)value;
            return 1;
        }
        value = PyLong_AsLongLongAndOverflow(number, &overflow);
        if (value == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        if (overflow > 0) {
            *magnitude = PyLong_AsUnsignedLongLong(number);
            if (*magnitude == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                return 0;
            }
            *negative = 0;
            return 1;
        }
        if (overflow < 0)
            return 0;
        *negative = value < 0;
        *magnitude = value < 0 ? 0ULL - (unsigned long long)value : (unsigned long long)value;
        return 1;
    }

    static inline PyObject *dissect_ascii_text(const char *text, Py_ssize_t size) {
        PyObject *out = PyUnicode_New(size, 127);
        if (out != NULL)
            memcpy(PyUnicode_1BYTE_DATA(out), text, size);
        return out;
    }

    /* An int's str where it is of 64 bits, its digits written in C; None for any other value. */
    static inline PyObject *dissect_int_text(PyObject *number) {
        char text[24], *end = text + sizeof(text), *out;
        unsigned long long magnitude;
        int negative, size;
        if (!dissect_magnitude(number, &magnitude, &negative)) {
            Py_INCREF(Py_None);
            return Py_None;
        }
        size = dissect_decimal_size(magnitude);
        dissect_decimal_back(end, magnitude, size);
        out = end - size;
        if (negative)
            *--out = '-';
        return dissect_ascii_text(out, end - out);
    }

    /* dec_hex's text: "42 (0x2a)", "-42 (-0x2a)"; None beyond 64 bits. */
    static inline PyObject *dissect_dec_hex_text(PyObject *number) {
        char text[64], *end = text + sizeof(text), *out;
        unsigned long long magnitude;
        int negative;
        if (!dissect_magnitude(number, &magnitude, &negative)) {
            Py_INCREF(Py_None);
            return Py_None;
        }
        *--end = ')';
        out = dissect_digits_back(end, magnitude, 16, 1);
        *--out = 'x';
        *--out = '0';
        if (negative)
            *--out = '-';
        *--out = '(';
        *--out = ' ';
        out = dissect_digits_back(out, magnitude, 10, 1);
        if (negative)
            *--out = '-';
        return dissect_ascii_text(out, text + sizeof(text) - out);
    }

    /* hex_text's: "0x002a"; None for a negative number, one beyond 64 bits or a width beyond 32. */
    static inline PyObject *dissect_hex_text(PyObject *number, Py_ssize_t width) {
        char text[64], *end = text + sizeof(text), *out;
        unsigned long long magnitude;
        int negative;
        if (width < 0 || width > 32 || !dissect_magnitude(number, &magnitude, &negative) || negative) {
            Py_INCREF(Py_None);
            return Py_None;
        }
        out = dissect_digits_back(end, magnitude, 16, (int)width);
        *--out = 'x';
        *--out = '0';
        return dissect_ascii_text(out, end - out);
    }
    """
    object _table_text "dissect_table_text" (object number, list table)
    object _int_text "dissect_int_text" (object number)
    object _dec_hex_text "dissect_dec_hex_text" (object number)
    object _hex_text "dissect_hex_text" (object number, Py_ssize_t width)
    # The views' C writers (render/output.pxd, text.pxd, jsonout.pxd) write their digits with these.
    char *digits_back "dissect_digits_back" (char *end, unsigned long long number, unsigned base, int width)
    bint int_magnitude "dissect_magnitude" (object number, unsigned long long *magnitude, int *negative)
    int decimal_size "dissect_decimal_size" (unsigned long long number)
    void decimal_back "dissect_decimal_back" (char *end, unsigned long long number, int size)

cdef class ValueTexts:
    cdef readonly object fmt
    cdef readonly dict texts
    cdef readonly tuple bool_texts
    cpdef text(self, value)

cdef bint _has_text(value)

cdef list DECIMALS
cdef bint _COMPILED
@cython.locals(text=str)
cpdef str decimal_text(number)
cpdef str or_unknown(value)
cpdef str counted(count, noun)
cpdef dec_hex(value)
cpdef hex_text(value, Py_ssize_t width)
cpdef hex16(value)

@cython.locals(ports=dict)
cpdef endpoint(ip, port)
cdef Py_ssize_t ENDPOINT_TEXTS, _kept
cdef dict _TEXTS
