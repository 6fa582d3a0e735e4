# Compile-time declarations for the Cython build (see setup.py and model.pxd); the .py beside this
# file is the source and runs as it is without them.

cimport cython
from dissect.core.model cimport AnalysisRecord, Field, Finding, Message, display_of
from dissect.capture.layers cimport Layer, Packet, layer_summary
from dissect.pipeline cimport FrameRecord
from dissect.core.bounded cimport kept
from dissect.core.fmt cimport decimal_text, digits_back, endpoint
from dissect.render.output cimport BatchedOutput, utf8_output, dissect_buffer

@cython.locals(field=Field, indent=str, line=str)
cdef _field_lines(fields, Py_ssize_t depth, list lines)

cpdef safe(text)
cdef bint _COMPILED

cdef extern from *:
    """
    /* Whether a str of ASCII characters is printable: no byte below 0x20 and no 0x7f (DEL). Eight bytes at a
       time: w - 0x20.. sets the high bit of the lowest byte below 0x20 (and borrows only above it), w + 0x01..
       sets it in a 0x7f byte (ASCII bytes are below 0x80: no carry leaves a byte). -1 for a str that is not
       ASCII, and for None (str.isprintable after it then raises). */
    static inline int dissect_ascii_printable(PyObject *text) {
        const unsigned char *data;
        Py_ssize_t size, i = 0;
        unsigned long long word;
        if (!PyUnicode_Check(text) || !PyUnicode_IS_ASCII(text))
            return -1;
        data = PyUnicode_1BYTE_DATA(text);
        size = PyUnicode_GET_LENGTH(text);
        for (; i + 8 <= size; i += 8) {
            memcpy(&word, data + i, 8);
            if (((word - 0x2020202020202020ULL) | (word + 0x0101010101010101ULL)) & 0x8080808080808080ULL)
                return 0;
        }
        for (; i < size; i++)
            if (data[i] < 0x20 || data[i] == 0x7f)
                return 0;
        return 1;
    }

    /* Whether a str is printable (str.isprintable): 1 or 0; ASCII eight bytes a step (dissect_ascii_printable),
       other text a character at a time, the characters beyond ASCII by the Unicode database as isprintable reads
       them. -1, for safe() to go the slow way, for a str subclass that is not ASCII and for anything not a str. */
    static inline int dissect_printable(PyObject *text) {
        int ascii = dissect_ascii_printable(text);
        int kind;
        const void *data;
        Py_ssize_t size, i;
        Py_UCS4 code;
        if (ascii >= 0 || !PyUnicode_CheckExact(text))
            return ascii;
        kind = PyUnicode_KIND(text);
        data = PyUnicode_DATA(text);
        size = PyUnicode_GET_LENGTH(text);
        for (i = 0; i < size; i++) {
            code = PyUnicode_READ(kind, data, i);
            if (code < 0x80 ? code < 0x20 || code == 0x7f : !Py_UNICODE_ISPRINTABLE(code))
                return 0;
        }
        return 1;
    }

    /* A str of printable characters copied as UTF-8: 1; 0, with nothing written, for any other (safe() escapes
       it first). ASCII is copied as it is. */
    static inline int dissect_buffer_plain(dissect_buffer *buffer, PyObject *text) {
        int printable;
        if (!PyUnicode_CheckExact(text))
            return 0;
        printable = dissect_printable(text);
        if (printable != 1)
            return 0;
        return dissect_buffer_str(buffer, text) < 0 ? -1 : 1;  /* output.pxd: none is a surrogate, so as encoded */
    }
    """
    int _printable "dissect_printable" (object text)  # any object: -1 where it is not a str

cdef extern from *:
    """
    /* The lines joined by newlines, as UTF-8: "\\n".join(lines).encode("utf-8", "replace"). A line of ASCII is
       copied as it is, the others are encoded one by one; a bytes "line" is UTF-8 already (lines of their own).
       NULL with an exception set where it fails. */
    static inline PyObject *dissect_utf8_lines(PyObject *lines) {
        Py_ssize_t count = PyList_GET_SIZE(lines), size = count > 1 ? count - 1 : 0, i, n;
        PyObject *encoded, *result = NULL, *line, *part;
        char *out;
        encoded = PyList_New(count);  /* the UTF-8 of each line that is not ASCII; None for the others */
        if (encoded == NULL)
            return NULL;
        for (i = 0; i < count; i++) {
            line = PyList_GET_ITEM(lines, i);
            if (PyBytes_Check(line)) {  /* UTF-8 already (_field_block) */
                part = line;
                Py_INCREF(part);
                size += PyBytes_GET_SIZE(line);
            } else if (!PyUnicode_Check(line)) {
                PyErr_SetString(PyExc_TypeError, "a line of text is neither a str nor UTF-8");
                goto done;
            } else if (PyUnicode_IS_ASCII(line)) {
                part = Py_None;
                Py_INCREF(part);
                size += PyUnicode_GET_LENGTH(line);
            } else {
                part = PyUnicode_AsEncodedString(line, "utf-8", "replace");
                if (part == NULL)
                    goto done;
                size += PyBytes_GET_SIZE(part);
            }
            PyList_SET_ITEM(encoded, i, part);
        }
        result = PyBytes_FromStringAndSize(NULL, size);
        if (result == NULL)
            goto done;
        out = PyBytes_AS_STRING(result);
        for (i = 0; i < count; i++) {
            if (i)
                *out++ = '\\n';
            part = PyList_GET_ITEM(encoded, i);
            if (part == Py_None) {
                line = PyList_GET_ITEM(lines, i);
                n = PyUnicode_GET_LENGTH(line);
                memcpy(out, PyUnicode_1BYTE_DATA(line), n);
            } else {
                n = PyBytes_GET_SIZE(part);
                memcpy(out, PyBytes_AS_STRING(part), n);
            }
            out += n;
        }
    done:
        Py_DECREF(encoded);
        return result;
    }
    """
    bytes _utf8_lines "dissect_utf8_lines" (list lines)
cpdef protocol_title(key)
cdef dict _TITLES

@cython.locals(whole=cython.longlong)
cdef bytes _number_and_time(Py_ssize_t number, double elapsed)
@cython.locals(micros=double, whole=cython.longlong)
cdef long long _exact_micros(Py_ssize_t number, double elapsed) except? -2
cdef Py_ssize_t LENGTH_TEXTS
cdef list _LENGTHS
@cython.locals(text=bytes)
cdef bytes _length_column(Py_ssize_t wirelen)

cdef Py_ssize_t PADDED_ENDPOINTS
cdef dict _PADDED_TITLES
@cython.locals(text=bytes)
cdef bytes _padded_title(key)

cdef bytes ARROW, RESET_BYTES, NEWLINE
@cython.locals(finding=Finding)
cdef bytes _analysis_line(AnalysisRecord rec)
cdef dict _SEVERITY_BYTES, _WORST_TAILS

cdef class SummaryRenderer:
    cdef public object out, color, write_bytes
    cdef public dict sources, destinations
    cdef public Py_ssize_t columns
    cdef public BatchedOutput batched
    @cython.locals(packet=Packet, head=bytes, source=bytes, destination=bytes, info=str, line=bytes)
    cpdef frame(self, FrameRecord record)
    cpdef analysis(self, rec)
    cdef _put(self, bytes line)
    @cython.locals(ports=dict, text=bytes, shown=str)
    cdef bytes _column(self, dict table, ip, port, bint left)
    @cython.locals(packet=Packet, number=Py_ssize_t, elapsed=double, whole=cython.longlong)
    cdef _line(self, FrameRecord record, worst)

@cython.locals(msg=Message)
cdef bint _any_message_findings(messages)

cdef class TreeRenderer:
    cdef public object out, color, write_bytes
    @cython.locals(packet=Packet, lines=list, layers=list, keys=list, layer=Layer, msg=Message, finding=Finding)
    cpdef frame(self, FrameRecord record)
    @cython.locals(where=str, finding=Finding)
    cpdef _message(self, Message msg, list lines)
    @cython.locals(where=str, text=str)
    cpdef str _finding(self, Finding finding)

@cython.locals(rank=Py_ssize_t, msg=Message)
cdef object _worst(FrameRecord record)
@cython.locals(found=Py_ssize_t, finding=Finding)
cdef Py_ssize_t _worst_rank(list findings, Py_ssize_t rank) except -2

@cython.locals(field=Field, level=Py_ssize_t, indent=str, generated=bint, tag=Py_ssize_t, start=Py_ssize_t)
cdef _field_bytes(fields, Py_ssize_t depth)
cdef bytes _field_block(list fields)
cdef bytes _message_block(Message msg)
@cython.locals(value=object)
cdef _tree_display(Field field)
cdef _tree_text(text)
cdef _tree_number(value)

cdef extern from *:
    """
    /* A summary line as UTF-8 (text.py: SummaryRenderer._line), into a buffer of output.pxd: its columns' bytes
       copied, its info copied as it is where it is printable ASCII. */
    static dissect_buffer dissect_line_out = {NULL, 0, 0};

    /* A line begins: what a line cut short by an exception left is dropped. */
    static inline void dissect_line_start(void) {
        dissect_line_out.size = 0;
    }

    static inline int dissect_line_bytes(PyObject *data) {
        return dissect_buffer_raw(&dissect_line_out, PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data));
    }

    /* 1: the text copied as UTF-8; 0: nothing written, the text is not printable (safe() and encode() then make
       it). */
    static inline int dissect_line_plain(PyObject *text) {
        return dissect_buffer_plain(&dissect_line_out, text);
    }

    /* The No. and Time columns, "%6d %4d.%06d ", of numbers that are not negative (_exact_micros). */
    static inline int dissect_line_head(long long number, long long seconds, long long micros) {
        char text[64], *end = text + sizeof(text), *out = end;
        *--out = ' ';
        out = dissect_digits_back(out, (unsigned long long)micros, 10, 6);  /* core/fmt.pxd */
        *--out = '.';
        out = dissect_digits_back(out, (unsigned long long)seconds, 10, 1);
        while (end - out < 12)
            *--out = ' ';  /* "%4d." after the space: 4 + 8 */
        *--out = ' ';
        end = out;
        out = dissect_digits_back(out, (unsigned long long)number, 10, 1);
        while (end - out < 6)
            *--out = ' ';
        return dissect_buffer_raw(&dissect_line_out, out, text + sizeof(text) - out);
    }

    /* An endpoint's column (SummaryRenderer._column) written in place: core.fmt.endpoint's text of an address of
       ASCII characters and a port from 0 to 65535, padded with spaces to 21 characters, after it for the
       Destination (``left``, with the space after the column) and before it for the Source. 1; 0, with nothing
       written, for any other address or port (no address, no port), which _column then writes. */
    static inline int dissect_line_endpoint(PyObject *ip, PyObject *port, int left) {
        char text[80], *out = text;
        const char *address;
        Py_ssize_t length, shown, pad;
        long long number;
        int bracket, digits;
        if (!PyUnicode_CheckExact(ip) || !PyUnicode_IS_ASCII(ip) || !PyLong_CheckExact(port)
                || !dissect_compact_int(port, &number) || number < 0 || number > 65535)
            return 0;
        address = (const char *)PyUnicode_1BYTE_DATA(ip);
        length = PyUnicode_GET_LENGTH(ip);
        if (length > 48)
            return 0;
        bracket = memchr(address, ':', length) != NULL;  /* IPv6: [address]:port */
        digits = dissect_decimal_size((unsigned long long)number);
        shown = length + 2 * bracket + 1 + digits;
        pad = shown < 21 ? 21 - shown : 0;
        if (!left) {
            memset(out, ' ', pad);
            out += pad;
        }
        if (bracket)
            *out++ = '[';
        memcpy(out, address, length);
        out += length;
        if (bracket)
            *out++ = ']';
        *out++ = ':';
        dissect_decimal_back(out + digits, (unsigned long long)number, digits);
        out += digits;
        if (left) {
            memset(out, ' ', pad + 1);
            out += pad + 1;
        }
        return dissect_buffer_raw(&dissect_line_out, text, out - text) < 0 ? -1 : 1;
    }

    /* The Length column, "%5d " of a wire length from 0 to 99999: 1; 0, with nothing written, for another. */
    static inline int dissect_line_length(PyObject *wirelen) {
        char text[8];
        long long number;
        int digits;
        if (!PyLong_CheckExact(wirelen) || !dissect_compact_int(wirelen, &number) || number < 0 || number > 99999)
            return 0;
        digits = dissect_decimal_size((unsigned long long)number);
        memset(text, ' ', 5 - digits);
        dissect_decimal_back(text + 5, (unsigned long long)number, digits);
        text[5] = ' ';
        return dissect_buffer_raw(&dissect_line_out, text, 6) < 0 ? -1 : 1;
    }

    /* _frame_span(frames) of a list of one to six ints (of 64 bits), written in place: 1; 0, with nothing written,
       for anything else ("none", the span of a longer list), which _frame_span makes. */
    static inline int dissect_line_frames(PyObject *frames) {
        Py_ssize_t count, start = dissect_line_out.size, i;
        int written;
        if (!PyList_CheckExact(frames) || (count = PyList_GET_SIZE(frames)) == 0 || count > 6)
            return 0;
        for (i = 0; i < count; i++) {
            if (i && dissect_buffer_raw(&dissect_line_out, ",", 1) < 0)
                return -1;
            written = dissect_buffer_int(&dissect_line_out, PyList_GET_ITEM(frames, i));  /* output.pxd */
            if (written <= 0) {
                dissect_line_out.size = start;  /* not an int of 64 bits: nothing written */
                return written;
            }
        }
        return 1;
    }

    /* What f"{value}" writes, as UTF-8 (errors replaced). */
    static inline int dissect_line_text(PyObject *value) {
        PyObject *text;
        int written;
        if (PyUnicode_CheckExact(value))
            return dissect_buffer_str(&dissect_line_out, value);  /* output.pxd */
        text = PyObject_Format(value, NULL);
        if (text == NULL)
            return -1;
        written = dissect_buffer_str(&dissect_line_out, text);
        Py_DECREF(text);
        return written;
    }

    static inline PyObject *dissect_line_take(void) {
        return dissect_buffer_take(&dissect_line_out);
    }
    """
    void _line_start "dissect_line_start" ()
    int _line_bytes "dissect_line_bytes" (bytes data) except -1
    int _line_plain "dissect_line_plain" (str text) except -1
    int _line_head "dissect_line_head" (long long number, long long seconds, long long micros) except -1
    int _line_text "dissect_line_text" (object value) except -1
    int _line_endpoint "dissect_line_endpoint" (object ip, object port, bint left) except -1
    int _line_length "dissect_line_length" (object wirelen) except -1
    int _line_frames "dissect_line_frames" (object frames) except -1
    bytes _line_take "dissect_line_take" ()

cdef extern from *:
    """
    /* The field lines of -V as UTF-8 (text.py: _field_block), into a buffer of output.pxd. */
    static dissect_buffer dissect_tree_out = {NULL, 0, 0};

    static inline void dissect_tree_start(void) {
        dissect_tree_out.size = 0;
    }

    static inline int dissect_tree_raw(const char *text, Py_ssize_t size) {
        return dissect_buffer_raw(&dissect_tree_out, text, size);
    }

    /* The newline before a line but the first. */
    static inline int dissect_tree_newline(void) {
        return dissect_tree_out.size ? dissect_buffer_raw(&dissect_tree_out, "\\n", 1) : 0;
    }

    static inline PyObject *dissect_tree_take(void) {
        return dissect_buffer_take(&dissect_tree_out);
    }

    /* A str as UTF-8: ASCII copied, other text encoded as _utf8_lines encodes a line. */
    static inline int dissect_tree_str(PyObject *text) {
        return dissect_buffer_str(&dissect_tree_out, text);  /* output.pxd */
    }

    /* A str of printable characters (dissect_printable) copied as UTF-8: 1; 0, with nothing written, for another. */
    static inline int dissect_tree_plain(PyObject *text) {
        return dissect_buffer_plain(&dissect_tree_out, text);
    }

    /* Whether ``items`` holds any (``bool(items)``): a list's or tuple's size read in place. */
    static inline int dissect_any(PyObject *items) {
        if (PyList_CheckExact(items))
            return PyList_GET_SIZE(items) != 0;
        if (PyTuple_CheckExact(items))
            return PyTuple_GET_SIZE(items) != 0;
        return PyObject_IsTrue(items);
    }

    /* " [offset:length]" where both are ints from 0 to 9999 (most fields'): 1; 0, with nothing written, for any
       other (dissect_tree_int then writes each). */
    static inline int dissect_tree_range(PyObject *offset, PyObject *length) {
        long long start, size;
        char *out;
        if (!PyLong_CheckExact(offset) || !PyLong_CheckExact(length) || !dissect_compact_int(offset, &start)
                || !dissect_compact_int(length, &size) || start < 0 || start >= 10000 || size < 0 || size >= 10000)
            return 0;
        if (dissect_buffer_reserve(&dissect_tree_out, 12) < 0)
            return -1;
        out = dissect_tree_out.data + dissect_tree_out.size;
        *out++ = ' ';
        *out++ = '[';
        out += dissect_small_decimal(out, (unsigned)start);  /* core/fmt.pxd */
        *out++ = ':';
        out += dissect_small_decimal(out, (unsigned)size);
        *out++ = ']';
        dissect_tree_out.size = out - dissect_tree_out.data;
        return 1;
    }

    /* An int's digits (dissect_buffer_int): 1; 0, with nothing written, beyond 64 bits. */
    static inline int dissect_tree_int(PyObject *value) {
        return dissect_buffer_int(&dissect_tree_out, value);
    }

    /* A field line's start, from its indent to the ": " after its name, kept by the field's key (output.pxd:
       dissect_prefix) with the name and a tag (the indent's depth, whether generated). */
    static dissect_prefix *dissect_tree_prefixes = NULL;

    static inline Py_ssize_t dissect_tree_size(void) {
        return dissect_tree_out.size;
    }

    /* The kept start written: 1; 0, with nothing written, where none is kept for these. */
    static inline int dissect_tree_prefix(PyObject *key, PyObject *name, Py_ssize_t tag) {
        dissect_prefix *slot = dissect_prefix_slot(&dissect_tree_prefixes, key);
        return slot == NULL ? -1 : dissect_prefix_copy(&dissect_tree_out, slot, key, name, tag);
    }

    /* What was written from ``start`` on kept as the start for these. */
    static inline int dissect_tree_keep(PyObject *key, PyObject *name, Py_ssize_t tag, Py_ssize_t start) {
        dissect_prefix *slot = dissect_prefix_slot(&dissect_tree_prefixes, key);
        if (slot == NULL)
            return -1;
        dissect_prefix_keep(slot, &dissect_tree_out, start, key, name, tag);
        return 0;
    }
    """
    void _tree_start "dissect_tree_start" ()
    int _tree_raw "dissect_tree_raw" (const char *text, Py_ssize_t size) except -1
    int _tree_newline "dissect_tree_newline" () except -1
    bytes _tree_take "dissect_tree_take" ()
    int _tree_str "dissect_tree_str" (str text) except -1
    int _tree_plain "dissect_tree_plain" (object text) except -1
    int _tree_int "dissect_tree_int" (object value) except -1
    int _tree_range "dissect_tree_range" (object offset, object length) except -1
    int _any "dissect_any" (object items) except -1
    Py_ssize_t _tree_size "dissect_tree_size" ()
    int _tree_prefix "dissect_tree_prefix" (object key, object name, Py_ssize_t tag) except -1
    int _tree_keep "dissect_tree_keep" (object key, object name, Py_ssize_t tag, Py_ssize_t start) except -1

cdef _arrival_line(ts)
cdef Py_ssize_t LINE_TEXTS
cdef dict _link_lines, _protocols_lines
@cython.locals(line=str)
cdef str _link_line(linktype)
cdef str _link_text(linktype)
@cython.locals(keys=list, layer=Layer, stack=tuple, line=str)
cdef str _protocols_line(list layers, list messages)
cdef tuple _shown
@cython.locals(shown=tuple)
cpdef str _utc_second(whole)
cdef str _frame_title(FrameRecord record)
cpdef str _frame_span(frames)

cdef extern from "math.h":
    double _floor "floor" (double x)

cdef extern from *:
    """
    /* "    Arrival Time: <second>.<micros> UTC (epoch <seconds>.<micros>)" for 1 <= ts < 1e10, ``second`` the
       text of its whole second (ASCII): the microseconds of utc_text (Python's round() of the fraction's
       millionths, half to even as rint, at most 999999), and those of "%.6f", ts's exact binary value
       (mantissa / 2**shift) times 10**6 rounded half to even, as Python's float formatting rounds. None where
       there is no 128-bit integer type. */
    static inline PyObject *dissect_arrival_text(double ts, PyObject *second) {
    #ifdef __SIZEOF_INT128__
        static const char head[] = "    Arrival Time: ", middle[] = " UTC (epoch ";
        char text[128], *out = text;
        double whole = floor(ts), fraction = rint((ts - whole) * 1e6);
        unsigned long long utc = fraction > 999999.0 ? 999999 : (unsigned long long)fraction;
        unsigned long long mantissa, epoch, seconds;
        unsigned __int128 scaled, rest, half;
        int exponent, shift;
        char digits[24], *start;
        mantissa = (unsigned long long)ldexp(frexp(ts, &exponent), 53);  /* ts = mantissa / 2**(53 - exponent) */
        shift = 53 - exponent;  /* 19 to 52 for 1 <= ts < 1e10 */
        scaled = (unsigned __int128)mantissa * 1000000u;
        epoch = (unsigned long long)(scaled >> shift);
        rest = scaled - ((unsigned __int128)epoch << shift);
        half = (unsigned __int128)1 << (shift - 1);
        if (rest > half || (rest == half && (epoch & 1)))
            epoch++;
        if (!PyUnicode_Check(second) || !PyUnicode_IS_ASCII(second) || PyUnicode_GET_LENGTH(second) > 48)
            Py_RETURN_NONE;
        memcpy(out, head, sizeof(head) - 1);
        out += sizeof(head) - 1;
        memcpy(out, PyUnicode_1BYTE_DATA(second), PyUnicode_GET_LENGTH(second));
        out += PyUnicode_GET_LENGTH(second);
        *out++ = '.';
        out += 6;
        dissect_digits_back(out, utc, 10, 6);  /* core/fmt.pxd */
        memcpy(out, middle, sizeof(middle) - 1);
        out += sizeof(middle) - 1;
        seconds = epoch / 1000000;
        start = dissect_digits_back(digits + sizeof(digits), seconds, 10, 1);
        memcpy(out, start, digits + sizeof(digits) - start);
        out += digits + sizeof(digits) - start;
        *out++ = '.';
        out += 6;
        dissect_digits_back(out, epoch % 1000000, 10, 6);
        *out++ = ')';
        return PyUnicode_FromStringAndSize(text, out - text);
    #else
        Py_RETURN_NONE;
    #endif
    }
    """
    object _arrival_text "dissect_arrival_text" (double ts, object second)

cdef extern from *:
    """
    /* "Frame <number>: <wirelen> bytes on wire (<bits> bits), <caplen> bytes captured (<bits> bits)" where the three
       are ints from 0 to 2**40 (CPython's compact ints, read in place: core/fmt.pxd); None for any other value. */
    static inline char *dissect_put_text(char *out, const char *text) {
        size_t size = strlen(text);
        memcpy(out, text, size);
        return out + size;
    }

    static inline char *dissect_put_decimal(char *out, unsigned long long number) {
        int size = dissect_decimal_size(number);  /* core/fmt.pxd */
        dissect_decimal_back(out + size, number, size);
        return out + size;
    }

    static inline PyObject *dissect_frame_title(PyObject *number, PyObject *wirelen, PyObject *caplen) {
        long long values[3];
        PyObject *given[3] = {number, wirelen, caplen};
        char text[160], *out = text;
        int i;
        for (i = 0; i < 3; i++)
            if (!PyLong_CheckExact(given[i]) || !dissect_compact_int(given[i], &values[i]) || values[i] < 0
                    || values[i] >= (1LL << 40))
                Py_RETURN_NONE;
        out = dissect_put_text(out, "Frame ");
        out = dissect_put_decimal(out, values[0]);
        out = dissect_put_text(out, ": ");
        out = dissect_put_decimal(out, values[1]);
        out = dissect_put_text(out, " bytes on wire (");
        out = dissect_put_decimal(out, values[1] * 8);
        out = dissect_put_text(out, " bits), ");
        out = dissect_put_decimal(out, values[2]);
        out = dissect_put_text(out, " bytes captured (");
        out = dissect_put_decimal(out, values[2] * 8);
        out = dissect_put_text(out, " bits)");
        return dissect_ascii_text(text, out - text);
    }
    """
    object _frame_title_text "dissect_frame_title" (object number, object wirelen, object caplen)
