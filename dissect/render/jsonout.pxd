# Compile-time declarations for the Cython build (see setup.py and model.pxd); the .py beside this
# file is the source and runs as it is without them.

cimport cython
from dissect.core.model cimport Field, Finding, Message, display_of
from dissect.pipeline cimport FrameRecord
from dissect.capture.layers cimport Packet
from dissect.render.output cimport BatchedOutput, dissect_buffer, utf8_output
from dissect.core.fmt cimport digits_back

@cython.locals(data=dict)
cpdef dict field_dict(Field field)
cdef dict _FIELD_DICT
cpdef dict message_dict(Message msg)
cpdef dict frame_dict(FrameRecord record)
cdef bint _COMPILED
@cython.locals(packet=Packet)
cpdef bytes _frame_json(FrameRecord record, bint newline)
cdef Py_ssize_t FIELDS, MESSAGES, FINDINGS
@cython.locals(index=Py_ssize_t)
cdef bint _list_member(const char *name, Py_ssize_t size, list items, Py_ssize_t kind) except -1
@cython.locals(frames=list, index=Py_ssize_t)
cdef bint _write_message(Message msg) except -1
cdef bint _write_finding(Finding finding) except -1
cdef bint _write_field(Field field) except -1
cdef bint _write_display(Field field) except -1

# The renderer's per-record methods are cpdef: the Printer calls them in C where JSON is its only view.
cdef class JsonRenderer:
    cdef public object out, dumps_bytes, dumps, write_bytes, newline
    cdef public bint lines, compiled
    cdef public Py_ssize_t count
    cdef public BatchedOutput batched
    cpdef _emit(self, obj)
    cpdef _write(self, data)
    cpdef _emit_built(self, build, kind, source)
    cpdef frame(self, record)
    cpdef analysis(self, rec)

cdef extern from *:
    """
    /* The JSON writer of frame records (jsonout.py: _frame_json), into a buffer of output.pxd. Values are
       written as orjson writes them: a str quoted, with \\" \\\\ \\b \\t \\n \\f \\r and \\u00XX for the other
       bytes below 0x20, the rest as UTF-8; an int of -2**63 to 2**64-1 in decimal; a float of 1e-4 to 1e16 (or 0)
       as repr writes it; None, True, False; bytes as their hex text. */
    static dissect_buffer dissect_json_out = {NULL, 0, 0};

    static inline void dissect_json_start(void) {
        dissect_json_out.size = 0;
    }

    /* 1: written (a record's writer ends an and-chain with it). */
    static inline int dissect_json_raw(const char *text, Py_ssize_t size) {
        return dissect_buffer_raw(&dissect_json_out, text, size) < 0 ? -1 : 1;
    }

    static inline PyObject *dissect_json_take(void) {
        return dissect_buffer_take(&dissect_json_out);
    }

    /* Whether none of eight bytes needs an escape: (w - 0x20..) & ~w sets the high bit of a byte below 0x20, the
       same of w ^ 0x22.., of w ^ 0x5c.. and of w ^ 0x7f.. less 0x01.. that of a '"', a '\\' and a DEL (UTF-8's bytes
       above 0x7f are masked by ~w). */
    static inline int dissect_json_plain8(const unsigned char *text) {
        const unsigned long long ones = 0x0101010101010101ULL;
        unsigned long long word, quote, backslash, del;
        memcpy(&word, text, 8);
        quote = word ^ (0x22 * ones);
        backslash = word ^ (0x5c * ones);
        del = word ^ (0x7f * ones);
        return !((((word - 0x20 * ones) & ~word) | ((quote - ones) & ~quote) | ((backslash - ones) & ~backslash)
                  | ((del - ones) & ~del)) & (0x80 * ones));
    }

    static inline char *dissect_json_escape(char *out, unsigned char c) {
        static const char hex[] = "0123456789abcdef";
        if (c >= 0x20 && c != '"' && c != '\\\\' && c != 0x7f) {
            *out++ = (char)c;
            return out;
        }
        *out++ = '\\\\';
        switch (c) {
        case '"': *out++ = '"'; break;
        case '\\\\': *out++ = '\\\\'; break;
        case '\\b': *out++ = 'b'; break;
        case '\\t': *out++ = 't'; break;
        case '\\n': *out++ = 'n'; break;
        case '\\f': *out++ = 'f'; break;
        case '\\r': *out++ = 'r'; break;
        default:
            *out++ = 'u'; *out++ = '0'; *out++ = '0';
            *out++ = hex[c >> 4]; *out++ = hex[c & 15];
        }
        return out;
    }

    /* A text escaped between ``open`` and ``close`` (a JSON string's quotes, or more): eight bytes at a time where
       none needs an escape, the last ones of a text of eight or more as the eight that end it. */
    static inline int dissect_json_wrapped(const unsigned char *text, Py_ssize_t size, const char *open,
                                           const char *close, Py_ssize_t ends) {
        Py_ssize_t i = 0;
        char *out;
        if (dissect_buffer_reserve(&dissect_json_out, 6 * size + 2 * ends) < 0)  /* \\u00XX: six bytes at most */
            return -1;
        out = dissect_json_out.data + dissect_json_out.size;
        memcpy(out, open, ends);
        out += ends;
        while (i + 8 <= size) {
            if (dissect_json_plain8(text + i)) {
                memcpy(out, text + i, 8);
                out += 8;
                i += 8;
            } else {
                out = dissect_json_escape(out, text[i++]);
            }
        }
        if (i < size && size >= 8 && dissect_json_plain8(text + size - 8)) {
            memcpy(out, text + i, size - i);
            out += size - i;
            i = size;
        }
        while (i < size)
            out = dissect_json_escape(out, text[i++]);
        memcpy(out, close, ends);
        out += ends;
        dissect_json_out.size = out - dissect_json_out.data;
        return 0;
    }

    /* A text quoted and escaped. */
    static inline int dissect_json_text(const unsigned char *text, Py_ssize_t size) {
        return dissect_json_wrapped(text, size, "\\"", "\\"", 1);
    }

    /* The bytes of the character at text[i] (a byte above 0x7f) where it is one that JSON writes as a \\u escape
       for terminals (jsonout.py: _ESCAPED; a C1 control, U+061C, U+200B-200F, U+2028-202E, U+2060-2069,
       U+FEFF), its code point in *code; else 0. */
    static inline int dissect_json_hidden(const unsigned char *t, Py_ssize_t i, Py_ssize_t size, unsigned *code) {
        unsigned char lead = t[i];
        if (lead == 0xc2 && i + 1 < size && t[i + 1] <= 0x9f) {
            *code = t[i + 1];
            return 2;
        }
        if (lead == 0xd8 && i + 1 < size && t[i + 1] == 0x9c) {
            *code = 0x61c;
            return 2;
        }
        if (lead == 0xe2 && i + 2 < size) {
            unsigned char second = t[i + 1], third = t[i + 2];
            if ((second == 0x80 && ((third >= 0x8b && third <= 0x8f) || (third >= 0xa8 && third <= 0xae)))
                    || (second == 0x81 && third >= 0xa0 && third <= 0xa9)) {
                *code = 0x2000 | ((second & 0x3f) << 6) | (third & 0x3f);
                return 3;
            }
        }
        if (lead == 0xef && i + 2 < size && t[i + 1] == 0xbb && t[i + 2] == 0xbf) {
            *code = 0xfeff;
            return 3;
        }
        return 0;
    }

    /* A text that is not ASCII, escaped as dissect_json_wrapped escapes it and with the characters of
       dissect_json_hidden as \\u escapes, byte by byte (such texts are names: short). */
    static inline int dissect_json_wrapped_utf8(const unsigned char *text, Py_ssize_t size, const char *open,
                                                const char *close, Py_ssize_t ends) {
        static const char hex[] = "0123456789abcdef";
        Py_ssize_t i = 0;
        unsigned code;
        int taken;
        char *out;
        while (i < size && text[i] != 0xc2 && text[i] != 0xd8 && text[i] != 0xe2 && text[i] != 0xef)
            i++;
        if (i == size)  /* no lead byte of such a character: the writer of eight bytes a step */
            return dissect_json_wrapped(text, size, open, close, ends);
        i = 0;
        if (dissect_buffer_reserve(&dissect_json_out, 6 * size + 2 * ends) < 0)
            return -1;
        out = dissect_json_out.data + dissect_json_out.size;
        memcpy(out, open, ends);
        out += ends;
        while (i < size) {
            if (text[i] < 0x80 || !(taken = dissect_json_hidden(text, i, size, &code))) {
                out = dissect_json_escape(out, text[i++]);
                continue;
            }
            *out++ = '\\\\'; *out++ = 'u';
            *out++ = hex[code >> 12]; *out++ = hex[(code >> 8) & 15]; *out++ = hex[(code >> 4) & 15];
            *out++ = hex[code & 15];
            i += taken;
        }
        memcpy(out, close, ends);
        out += ends;
        dissect_json_out.size = out - dissect_json_out.data;
        return 0;
    }

    /* A float of whole microseconds (a capture's time) as repr writes it, without its general algorithm (6,700
       instructions): where the number of millionths nearest to it, divided by 10**6 (a division IEEE rounds
       correctly, as reading the text back would), is the float itself, that text reads back as it; below 2**33
       the float's steps are finer than 10**-6, so no other text of six decimals or fewer does, and repr, the
       shortest that reads back, is it without its trailing zeros. 1: written; 0: not such a float. */
    static inline int dissect_json_micros(double number, double magnitude) {
        double scaled = rint(magnitude * 1e6);
        unsigned long long micros, whole, fraction;
        char text[48], *out = text + sizeof(text);
        int places = 6;
        if (magnitude >= 8589934592.0 || scaled / 1e6 != magnitude)
            return 0;
        micros = (unsigned long long)scaled;
        whole = micros / 1000000;
        fraction = micros % 1000000;
        while (places > 1 && fraction % 10 == 0) {
            fraction /= 10;
            places--;
        }
        out = dissect_digits_back(out, fraction, 10, places);  /* core/fmt.pxd */
        *--out = '.';
        out = dissect_digits_back(out, whole, 10, 1);
        if (signbit(number))  /* -0.0 too */
            *--out = '-';
        return dissect_json_raw(out, text + sizeof(text) - out);
    }

    /* 1: written; 0: a value left to orjson (nothing written); -1: an exception is set. */
    static inline int dissect_json_value(PyObject *value) {
        if (PyUnicode_CheckExact(value)) {
            Py_ssize_t size;
            const char *text;
            if (PyUnicode_IS_ASCII(value))
                return dissect_json_text(PyUnicode_1BYTE_DATA(value), PyUnicode_GET_LENGTH(value)) < 0 ? -1 : 1;
            text = PyUnicode_AsUTF8AndSize(value, &size);
            if (text == NULL) {  /* a lone surrogate: orjson refuses it */
                PyErr_Clear();
                return 0;
            }
            return dissect_json_wrapped_utf8((const unsigned char *)text, size, "\\"", "\\"", 1) < 0 ? -1 : 1;
        }
        if (PyLong_CheckExact(value))
            return dissect_buffer_int(&dissect_json_out, value);
        if (PyFloat_CheckExact(value)) {  /* where orjson's shortest digits are written as repr writes them */
            double number = PyFloat_AS_DOUBLE(value), magnitude = number < 0 ? -number : number;
            char *text;
            int written;
            if (number != 0.0 && !(magnitude >= 1e-4 && magnitude < 1e16))
                return 0;
            written = dissect_json_micros(number, magnitude);
            if (written)
                return written;
            text = PyOS_double_to_string(number, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
            if (text == NULL)
                return -1;
            written = dissect_json_raw(text, (Py_ssize_t)strlen(text));
            PyMem_Free(text);
            return written;
        }
        if (value == Py_None)
            return dissect_json_raw("null", 4);
        if (value == Py_True)
            return dissect_json_raw("true", 4);
        if (value == Py_False)
            return dissect_json_raw("false", 5);
        if (PyBytes_CheckExact(value)) {
            static const char hex[] = "0123456789abcdef";
            const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(value);
            Py_ssize_t i, size = PyBytes_GET_SIZE(value);
            char *out;
            if (dissect_buffer_reserve(&dissect_json_out, 2 * size + 2) < 0)
                return -1;
            out = dissect_json_out.data + dissect_json_out.size;
            *out++ = '"';
            for (i = 0; i < size; i++) {
                *out++ = hex[data[i] >> 4];
                *out++ = hex[data[i] & 15];
            }
            *out++ = '"';
            dissect_json_out.size = out - dissect_json_out.data;
            return 1;
        }
        return 0;
    }

    /* The text default_display (core/model.py) makes of ``value``, written as a member named ``name`` without
       making the text, where ``value`` is an int of 64 bits (its digits, as a JSON string) or a str (the str in
       quotes, as a JSON string: its quotes escaped): 1. 0, with nothing written, for any other value and for a
       str with a lone surrogate (display_of then makes the text, and the writer goes on as with any display). */
    static inline int dissect_json_default_display(const char *name, Py_ssize_t size, PyObject *value) {
        static const char quote[] = {0x22}, open_text[] = {0x22, 0x5c, 0x22}, close_text[] = {0x5c, 0x22, 0x22};
        Py_ssize_t start = dissect_json_out.size, length;
        const char *text;
        int written, ascii;
        if (PyLong_CheckExact(value)) {
            if (dissect_json_raw(name, size) < 0 || dissect_json_raw(quote, 1) < 0)
                return -1;
            written = dissect_buffer_int(&dissect_json_out, value);
            if (written != 1) {
                dissect_json_out.size = start;
                return written;
            }
            return dissect_json_raw(quote, 1);
        }
        if (!PyUnicode_CheckExact(value))
            return 0;
        ascii = PyUnicode_IS_ASCII(value);
        if (ascii) {
            text = (const char *)PyUnicode_1BYTE_DATA(value);
            length = PyUnicode_GET_LENGTH(value);
        } else {
            text = PyUnicode_AsUTF8AndSize(value, &length);
            if (text == NULL) {
                PyErr_Clear();
                return 0;
            }
        }
        if (dissect_json_raw(name, size) < 0)
            return -1;
        written = ascii ? dissect_json_wrapped((const unsigned char *)text, length, open_text, close_text, 3)
                        : dissect_json_wrapped_utf8((const unsigned char *)text, length, open_text, close_text, 3);
        return written < 0 ? -1 : 1;
    }

    /* A member of an object: its name (the text from the comma or brace before it to the colon), then its value. */
    static inline int dissect_json_member(const char *name, Py_ssize_t size, PyObject *value) {
        if (dissect_json_raw(name, size) < 0)
            return -1;
        return dissect_json_value(value);
    }

    /* A field record's key and name members, kept by the key (output.pxd: dissect_prefix). */
    static dissect_prefix *dissect_json_prefixes = NULL;

    static inline int dissect_json_key_name(PyObject *key, PyObject *name) {
        dissect_prefix *slot = dissect_prefix_slot(&dissect_json_prefixes, key);
        Py_ssize_t start = dissect_json_out.size;
        int written;
        if (slot == NULL)
            return -1;
        written = dissect_prefix_copy(&dissect_json_out, slot, key, name, 0);
        if (written)
            return written;
        written = dissect_json_member("{\\"key\\":", 7, key);
        if (written == 1)
            written = dissect_json_member(",\\"name\\":", 8, name);
        if (written == 1)
            dissect_prefix_keep(slot, &dissect_json_out, start, key, name, 0);
        return written;
    }
    """
    void _json_start "dissect_json_start" ()
    bint _json_raw "dissect_json_raw" (const char *text, Py_ssize_t size) except -1
    bytes _json_take "dissect_json_take" ()
    bint _json_member "dissect_json_member" (const char *name, Py_ssize_t size, object value) except -1
    int _json_default_display "dissect_json_default_display" (const char *name, Py_ssize_t size, object value) \
        except -1
    bint _json_key_name "dissect_json_key_name" (object key, object name) except -1
