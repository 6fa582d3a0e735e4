# Compile-time declarations for the Cython build (see setup.py and core/model.pxd); the .py beside this
# file is the source and runs as it is without them. Every line of output goes through BatchedOutput: the
# compiled views call write and add_utf8 in C.

from dissect.core.fmt cimport decimal_back, decimal_size, int_magnitude  # dissect_buffer_int's reader and digit writer

cdef class BatchedOutput:
    cdef public object stream, buffer, write_bytes
    cdef public list parts
    cdef public bint binary
    cdef public Py_ssize_t size
    cdef public int fd
    cpdef write(self, text)
    cpdef add_utf8(self, data)

cpdef BatchedOutput utf8_output(out)
cdef Py_ssize_t _BATCH, _BATCH_BYTES

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

    /* A str as UTF-8, ASCII copied as it is, other text encoded (errors replaced). */
    static inline int dissect_buffer_str(dissect_buffer *buffer, PyObject *text) {
        PyObject *encoded;
        int written;
        if (PyUnicode_IS_ASCII(text))
            return dissect_buffer_raw(buffer, (const char *)PyUnicode_1BYTE_DATA(text), PyUnicode_GET_LENGTH(text));
        encoded = PyUnicode_AsEncodedString(text, "utf-8", "replace");
        if (encoded == NULL)
            return -1;
        written = dissect_buffer_raw(buffer, PyBytes_AS_STRING(encoded), PyBytes_GET_SIZE(encoded));
        Py_DECREF(encoded);
        return written;
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

    /* An int of -2**63 to 2**64 - 1 in decimal (an int's str; core/fmt.pxd reads it and writes its digits): 1; 0,
       with nothing written, for one beyond (or another object). */
    static inline int dissect_buffer_int(dissect_buffer *buffer, PyObject *value) {
        unsigned long long magnitude;
        long long small;
        int negative, digits;
        char *out;
        if (PyLong_CheckExact(value) && dissect_compact_int(value, &small) && small >= 0 && small < 10000) {
            if (dissect_buffer_reserve(buffer, 4) < 0)
                return -1;
            buffer->size += dissect_small_decimal(buffer->data + buffer->size, (unsigned)small);
            return 1;
        }
        if (!dissect_magnitude(value, &magnitude, &negative))
            return 0;
        digits = dissect_decimal_size(magnitude);  /* counted first, so that the digits are written in place */
        if (dissect_buffer_reserve(buffer, negative + digits) < 0)
            return -1;
        out = buffer->data + buffer->size;
        if (negative)
            *out++ = '-';
        dissect_decimal_back(out + digits, magnitude, digits);
        buffer->size += negative + digits;
        return 1;
    }

    /* Texts a view writes for field after field, kept by the field's key object (its FieldSpec's str: a capture's
       kinds of field are a few hundred) with the name and the tag (what else shaped the text: a depth) they were
       written for: a field then costs a copy. A slot keeps the name its key came with: a key whose fields each
       have a name of their own (a client record's subtree) is written in full. A table holds DISSECT_PREFIXES
       texts of at most DISSECT_PREFIX_BYTES bytes, each with a reference to its key and name, in sets of two a key's
       address is spread over (Fibonacci hashing): two keys whose addresses fall on one set both keep their text, and
       where a third comes the first keeps its own, so what hits depends little on where the keys were allocated. */
    #define DISSECT_PREFIX_SET_BITS 9  /* 512 sets of two */
    #define DISSECT_PREFIXES (2 << DISSECT_PREFIX_SET_BITS)
    #define DISSECT_PREFIX_BYTES 160
    typedef struct { PyObject *key, *name; Py_ssize_t tag, size; char text[DISSECT_PREFIX_BYTES]; } dissect_prefix;

    /* The slot of ``key`` (the table made at first use): the one of its set that holds it, else the set's first
       while it is free, else its second; NULL with MemoryError set. */
    static inline dissect_prefix *dissect_prefix_slot(dissect_prefix **table, PyObject *key) {
        dissect_prefix *set;
        if (*table == NULL) {
            *table = (dissect_prefix *)PyMem_Calloc(DISSECT_PREFIXES, sizeof(dissect_prefix));
            if (*table == NULL) {
                PyErr_NoMemory();
                return NULL;
            }
        }
        set = *table + 2 * ((((size_t)key >> 4) * (size_t)0x9E3779B97F4A7C15ULL)
                            >> (8 * sizeof(size_t) - DISSECT_PREFIX_SET_BITS));
        return set[0].key == key || set[0].key == NULL ? set : set + 1;
    }

    /* The slot's text written where it was kept for these: 1; 0, with nothing written, where it was not. */
    static inline int dissect_prefix_copy(dissect_buffer *buffer, dissect_prefix *slot, PyObject *key,
                                          PyObject *name, Py_ssize_t tag) {
        if (slot->key != key || slot->name != name || slot->tag != tag)
            return 0;
        return dissect_buffer_raw(buffer, slot->text, slot->size) < 0 ? -1 : 1;
    }

    /* What the buffer holds from ``start`` on kept as the text for these, unless the slot holds ``key`` already,
       the text is longer than a slot holds, or key or name is not a str (only a str cannot change). */
    static inline void dissect_prefix_keep(dissect_prefix *slot, dissect_buffer *buffer, Py_ssize_t start,
                                           PyObject *key, PyObject *name, Py_ssize_t tag) {
        Py_ssize_t size = buffer->size - start;
        if (slot->key == key || !PyUnicode_CheckExact(key) || !PyUnicode_CheckExact(name)
                || size > DISSECT_PREFIX_BYTES)
            return;
        Py_XDECREF(slot->key);
        Py_XDECREF(slot->name);
        Py_INCREF(key);
        Py_INCREF(name);
        slot->key = key;
        slot->name = name;
        slot->tag = tag;
        slot->size = size;
        memcpy(slot->text, buffer->data + start, size);
    }
    """
    ctypedef struct dissect_buffer:
        pass
