# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. Every line of output goes through BatchedOutput: the
# compiled views call write and add_utf8 in C.

cdef class BatchedOutput:
    cdef public object stream, buffer, write_bytes
    cdef public list parts
    cdef public bint binary
    cdef public Py_ssize_t size
    cpdef write(self, text)
    cpdef add_utf8(self, data)

cpdef BatchedOutput utf8_output(out)

cdef extern from *:
    """
    /* A growing byte buffer for the views that write their output in C (jsonout, text): kept from record to
       record, given back when taken past 1 MiB. The functions return -1 with MemoryError set where it cannot
       grow. */
    typedef struct { char *data; Py_ssize_t size, capacity; } dissect_buffer;

    static inline int dissect_buffer_grow(dissect_buffer *buffer, Py_ssize_t more) {
        Py_ssize_t capacity = buffer->capacity ? buffer->capacity : 65536;
        char *grown;
        while (capacity < buffer->size + more)
            capacity *= 2;
        grown = (char *)PyMem_Realloc(buffer->data, capacity);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        buffer->data = grown;
        buffer->capacity = capacity;
        return 0;
    }

    static inline int dissect_buffer_reserve(dissect_buffer *buffer, Py_ssize_t more) {
        return buffer->size + more <= buffer->capacity ? 0 : dissect_buffer_grow(buffer, more);
    }

    static inline int dissect_buffer_raw(dissect_buffer *buffer, const char *text, Py_ssize_t size) {
        if (dissect_buffer_reserve(buffer, size) < 0)
            return -1;
        memcpy(buffer->data + buffer->size, text, size);
        buffer->size += size;
        return 0;
    }

    /* The buffer's bytes, the buffer emptied. */
    static inline PyObject *dissect_buffer_take(dissect_buffer *buffer) {
        PyObject *result = PyBytes_FromStringAndSize(buffer->data, buffer->size);
        buffer->size = 0;
        if (buffer->capacity > (1 << 20)) {
            PyMem_Free(buffer->data);
            buffer->data = NULL;
            buffer->capacity = 0;
        }
        return result;
    }

    /* A number's decimal digits, after a minus sign where ``negative``. */
    static inline int dissect_buffer_digits(dissect_buffer *buffer, unsigned long long magnitude, int negative) {
        char digits[24];
        int n = 24;
        do {
            digits[--n] = (char)('0' + magnitude % 10);
            magnitude /= 10;
        } while (magnitude);
        if (negative)
            digits[--n] = '-';
        return dissect_buffer_raw(buffer, digits + n, 24 - n);
    }

    /* An int of -2**63 to 2**64 - 1 in decimal (an int's str): 1; 0, with nothing written, for one beyond. */
    static inline int dissect_buffer_int(dissect_buffer *buffer, PyObject *value) {
        int overflow;
        long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
        unsigned long long big;
        if (overflow == 0) {
            if (number == -1 && PyErr_Occurred())
                return -1;
            if (number < 0)
                return dissect_buffer_digits(buffer, 0ULL - (unsigned long long)number, 1) < 0 ? -1 : 1;
            return dissect_buffer_digits(buffer, (unsigned long long)number, 0) < 0 ? -1 : 1;
        }
        if (overflow < 0)
            return 0;
        big = PyLong_AsUnsignedLongLong(value);
        if (big == (unsigned long long)-1 && PyErr_Occurred()) {  /* past 2**64 - 1 */
            PyErr_Clear();
            return 0;
        }
        return dissect_buffer_digits(buffer, big, 0) < 0 ? -1 : 1;
    }
    """
    ctypedef struct dissect_buffer:
        pass
