"""``-j N``: a capture's conversations spread over N processes, output merged in frame order.

Every worker reads the whole capture and finds each frame's IP address pair, then dissects only the
frames it owns. A frame's owner is decided by its address pair, so all the packets of a
conversation meet in one worker with the cross-packet state they need: request and reply, the
packets of a multi-packet response, IP fragments, the port a NetQuake server hands out. TCP goes to
worker 0, which keeps the stream numbering of a single process; so do frames without an IP pair.
``Partition`` says how address pairs are dealt out.

The parent is worker 0: it dissects its share and, chunk by chunk of consecutive frame numbers, merges
the other workers' text with its own by frame number, so the output is the one a single process writes
(its share is the smaller for that work). What the end of the capture concludes is ordered by first frame,
as in one process. ``--stats`` adds up the workers' counts and merges their servers-seen tables. The abuse
analysis looks across conversations: each worker's messages, reduced to what it reads (endpoints, kind,
sizes, frame and time), go to the parent with their text, and the parent counts them in frame order, so its
state and what it writes, last, are one process's. The limits on the protocols' state (conversations,
streams, pending responses) hold per worker. A Ctrl-C is the parent's alone: every process stops after one
chunk (see ``_Stop``), and the end of the capture is concluded there, as one process concludes it.
"""

import copy
import fcntl
import itertools
import mmap
import os
import pickle
import signal
import struct
import time
import zlib
from sys import intern
from array import array
from _socket import AF_INET, AF_INET6, inet_pton
from operator import itemgetter

from .analysis.abuse import KEY as ABUSE
from .capture.files import CaptureError
from .capture.sources import CaptureFiles, open_capture
from .capture.layers import decode_frame, ethernet_ip_pair
from .core.escape import tell
from .core.interrupt import defer_interrupt, take_signals
from .progress import Progress, on_terminal
from .registry import UsageError, parse_decode_as
from .render.output import write_all
from .render.printer import Printer
from .render.stats import StatsCollector
from .session import Session, abuse_options, explain_failure, finish_order, first_failure

# Frame numbers per message from a worker, the parent merging them as it makes its own: fewer where each frame's text
# is large (-V, -x, JSON: about 1 to 3 KB a frame), so that a chunk fits in the pipe with room to spare and the
# worker goes on while the parent finishes its own chunk.
CHUNK = 512
CHUNK_FIELDS = 128
# A chunk also ends where its frames' captured bytes reach this: a frame's text grows with its bytes (-x writes about
# five times them, -V and JSON their fields), and a few hundred frames of 256 KiB each would make a chunk of hundreds
# of MB in the worker, the pipe and the parent. Every process reads every frame, so each ends its chunks at the same
# frames. (The benchmark's frames, a few hundred bytes each, never reach it.)
CHUNK_BYTES = 1 << 20
PIPE_BYTES = 1 << 20  # each worker's pipe to the parent (Linux's limit for an unprivileged process)
RING_BYTES = 1 << 21  # each worker's ring of shared memory, which its frames' text crosses in (see _Ring)
# A frame's text shorter than this (the summary's lines) crosses in its chunk: pickled, a hundred bytes cost less than
# their place in the ring and the view the parent takes of them there.
RING_TEXT = 512


# The split's model (see Partition).
PRESCAN = 4096       # frames whose address pairs are weighed before the workers start
MAX_PAIRS = 16384    # pairs placed by load; later pairs by hash
FRAME_COST = 64      # a frame costs about as much to dissect as 64 more bytes of it
# A TCP frame costs more than a datagram of its size (reassembly, line splitting; the benchmark's query and
# mixed captures measured 1.2 and 1.4 times the CPU per modelled byte): what goes to worker 0 alone
# (TCP, frames without IP) is weighed this much heavier.
PINNED_WEIGHT = 1.3
# The parent, worker 0, also merges every worker's output and counts the abuse analysis of every message: that work
# is modelled as a share of each frame's cost, whoever dissects the frame. It weighs more beside the summary's and
# --stats' dissecting than beside the field trees of -V and JSON, and little beside -x's hex dumps. (Measured on the
# benchmark's captures: these shares gave the parent and the worker of -j 2 about the same CPU time.)
MERGE_SHARE = 0.43
MERGE_SHARE_FIELDS = 0.2
MERGE_SHARE_HEX = 0.05


class Partition:
    """Which worker dissects a frame: the same answer in every worker, for the whole capture.

    UDP and other IP traffic is split by unordered IP address pair. Load is modelled as frame bytes plus a fixed
    cost per frame, TCP weighed heavier. Worker 0 (the parent) carries a share of every frame's cost for merging
    (``merge``), and the TCP and the frames without IP (pinned to it). Before the workers start, the
    parent weighs the address pairs of the capture's first frames (their addresses only, nothing is dissected) and
    deals them to the workers, heaviest first, each to the least loaded one. The workers inherit the table. A pair
    first met later goes to the worker with the least load at that moment, modelled the same way in every worker;
    once the table is full, a pair goes by a hash of its addresses, weighted so that the shares of those pairs make
    up for the load each worker carries whatever the split (in the proportions it has had so far). A pair's worker
    never changes, and the split depends on the capture and the view alone.
    """

    __slots__ = ("jobs", "merge", "pairs", "load", "fixed", "bounds")

    def __init__(self, jobs, first_path, merge=MERGE_SHARE):
        self.jobs = jobs
        self.merge = merge
        self.pairs = PairTable(MAX_PAIRS)
        self.load = _zeros(jobs)  # the modelled load of each worker, C doubles (compiled, read and added in C)
        self.fixed = 0.0
        self._deal(first_path)
        self.load = _zeros(jobs)
        self.fixed = 0.0     # the part of worker 0's load it carries whatever the split: merging, the pinned frames
        self.bounds = None   # the hashed placement's cumulative shares, fixed when the table fills

    def _deal(self, path):
        weights = {}
        try:
            for frame in itertools.islice(open_capture(path), PRESCAN):
                pair, _ = address_pair(frame)
                cost = self._fixed_load(frame, pair is None)
                if pair is not None:
                    weights[pair] = weights.get(pair, 0) + cost
        except CaptureError:
            pass  # the real pass reports it
        # Heaviest first, equals in the order they came: a key of floats alone sorts ten times faster than tuples.
        heaviest = sorted(weights.items(), key=itemgetter(1), reverse=True)[:self.pairs.limit]
        for pair, weight in heaviest:
            worker = self._least_loaded()
            self.pairs[pair] = worker
            self.load[worker] += weight

    def _least_loaded(self):
        """The worker with the least load, the first of equals (a loop: min() with a key costs three times as
        much, and every worker asks for every new pair)."""
        load = self.load
        best = 0
        for worker in range(1, self.jobs):
            if load[worker] < load[best]:
                best = worker
        return best

    def owner(self, frame, pair):
        cost = self._fixed_load(frame, pair is None)
        if pair is None:
            return 0  # its load is counted
        found = self.pairs.get(pair)
        worker = self._place(pair) if found is None else found
        self.load[worker] += cost
        return worker

    def _fixed_load(self, frame, pinned):
        """Add to worker 0's load what a frame costs it whatever the split (its merging; its dissecting too when it is
        pinned to worker 0); return the frame's cost."""
        cost = frame.wirelen + FRAME_COST  # the one model, before the workers start and in every worker
        fixed = cost * (self.merge + PINNED_WEIGHT) if pinned else cost * self.merge
        self.load[0] += fixed
        self.fixed += fixed
        return cost

    def _place(self, pair):
        if len(self.pairs) < self.pairs.limit:
            worker = self.pairs[pair] = self._least_loaded()
            return worker
        if self.bounds is None:
            self.bounds = self._hash_bounds()
        point = zlib.crc32(pair) / 0x100000000
        for worker in range(self.jobs - 1):
            if point < self.bounds[worker]:
                return worker
        return self.jobs - 1

    def _hash_bounds(self):
        """Cumulative shares of the hashed pairs. With ``t`` the part of the load so far that worker 0 carries whatever
        the split, it gets (1/jobs - t) / (1 - t) of them (none once t reaches 1/jobs) and the others split the rest
        evenly, so that each worker's load grows alike if the traffic goes on as it was."""
        if self.jobs == 1:
            return [1.0]
        total = sum(self.load)
        fixed = min(self.fixed / total, 1 / self.jobs) if total else 0.0
        first = (1 / self.jobs - fixed) / (1 - fixed)
        rest = (1 - first) / (self.jobs - 1)
        return [first + rest * index for index in range(self.jobs)]


class PairTable:
    """The Partition's table: an address pair (``pair_key``'s bytes) -> its worker, for at most ``limit`` pairs. Each
    pair is kept as a 64-bit number (``_folded``) in an array with twice ``limit`` slots, each a pair's number and its
    worker: the 16,384 pairs a long capture fills it with take 384 KB in every process where a dict of their bytes
    took 1.3 MB. Two pairs that fold to one number share a worker, which keeps each one's frames together all the
    same."""

    __slots__ = ("limit", "count", "numbers", "owners")

    def __init__(self, limit):
        self.limit = limit
        self.count = 0
        slots = 1
        while slots < 2 * limit:
            slots *= 2
        self.numbers = array("Q", bytes(8 * slots))
        self.owners = array("i", bytes(4 * slots))  # a pair's worker + 1; 0: a free slot

    def __len__(self):
        return self.count

    def get(self, pair):
        """The worker of ``pair``, or None."""
        number = _folded(pair)
        slot = self._slot(number)
        owner = self.owners[slot]
        return None if owner == 0 else owner - 1

    def __setitem__(self, pair, worker):
        """Place a pair not in the table yet (the Partition asks ``get`` first), while it holds fewer than ``limit``."""
        number = _folded(pair)
        slot = self._slot(number)
        if self.owners[slot] == 0:
            self.count += 1
        self.numbers[slot] = number
        self.owners[slot] = worker + 1

    def values(self):
        owners = self.owners
        return [owners[slot] - 1 for slot in range(len(owners)) if owners[slot]]

    def _slot(self, number):
        """The slot that holds ``number``, or the free one where it would go: the first from its own on (the table
        is at most half full)."""
        mask = len(self.owners) - 1
        slot = number & mask
        while self.owners[slot] != 0 and self.numbers[slot] != number:
            slot = (slot + 1) & mask
        return slot


def _folded(pair):
    """An address pair's bytes as one 64-bit number (FNV-1a)."""
    number = FNV_BASIS
    for index in range(len(pair)):
        number = ((number ^ pair[index]) * FNV_PRIME) & MASK64
    return number


FNV_BASIS, FNV_PRIME, MASK64 = 0xCBF29CE484222325, 0x100000001B3, 0xFFFFFFFFFFFFFFFF


def _zeros(count):
    return array("d", [0.0]) * count


def address_pair(frame):
    """(the frame's unordered IP address pair as ``pair_key`` makes it, its Packet if decoding it was needed).

    The pair is None for frames pinned to worker 0: no IP header, or TCP (see Partition)."""
    if frame.linktype == 1:
        found = ethernet_ip_pair(frame.data)
        if found is not None:
            return (None if found[1] == 6 else found[0]), None
    packet = decode_frame(frame.data, frame.linktype) if frame.data else None
    if packet is None or packet.src is None or packet.ip_proto == 6:
        return None, packet
    return pair_key(packet.src, packet.dst), packet


def pair_key(src, dst):
    """An unordered pair of IP addresses (texts) as one key: both packed (4 bytes for IPv4, 16 for IPv6), the lower
    first. Ethernet frames carrying IP give the same key from their bytes (``ethernet_ip_pair``)."""
    first, second = _packed(src), _packed(dst)
    return first + second if first <= second else second + first


def _packed(address):
    return inet_pton(AF_INET6 if ":" in address else AF_INET, address)


def run_parallel(args, out):
    """Run the capture files of ``args`` (the command's options; ``args.color`` already resolved to
    always or never) in ``args.jobs`` processes, writing to ``out``; return the exit code. The parent is
    worker 0: it dissects its share and merges the others' output with its own as it goes."""
    parse_decode_as(args.decode_as)  # a bad --decode-as is a usage error before any worker starts
    partition = Partition(args.jobs, args.files[0], _merge_share(args))
    receivers, rings, workers = [], [], []
    stop = _Stop()
    try:
        for index in range(1, args.jobs):
            receiver, sender = _pipe()
            receivers.append(receiver)
            _widen(receiver)
            rings.append(_Ring(RING_BYTES))
            try:
                workers.append(_fork(index, args, partition, receivers, rings, sender, stop))
            finally:
                sender.close()
                rings[-1].keep_reader()
    except OSError as exc:  # out of processes or file descriptors (ulimit): none of the work has begun
        _stop(workers)
        _close_all(receivers, rings)
        raise UsageError(f"-j {args.jobs}: cannot start the worker processes: {exc.strerror or exc}") from None
    printer = _printer(args, out)
    stop.take_ctrl_c()
    merger = _Merger(args, printer, receivers, rings, stop)
    finished = False
    try:
        code = merger.deliver(("end", _work(0, _own_args(args), partition, merger.deliver, None, stop)))
        finished = True
        return 130 if stop.interrupted() else code
    except KeyboardInterrupt:  # a second Ctrl-C: the workers' conclusions never come, end the output as it stands
        printer.close()
        return 130
    finally:
        stop.restore()
        _stop(workers, finished)
        _close_all(receivers, rings)


def _fork(index, args, partition, receivers, rings, sender, stop):
    """Start worker ``index``, which sends through ``sender`` and ``rings[-1]``; return its process id. The child
    closes the parent's ends of the pipes (``receivers``) and the other workers' rings, and never returns: it ends in
    ``os._exit``, with nothing of the parent's flushed or run at exit twice. It ignores Ctrl-C: the parent says where
    it stops (``stop``)."""
    pid = os.fork()
    if pid:
        return pid
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _close_all(receivers, rings[:-1])
        rings[-1].keep_writer()
        _worker(index, args, partition, sender, rings[-1], stop)
    finally:
        os._exit(0)


def _close_all(receivers, rings):
    for receiver in receivers:
        receiver.close()
    for ring in rings:
        ring.close()


def _stop(workers, finished=False):
    """Each worker is waited for, so none is left behind. After the run's end (``finished``) every one has sent its
    own and is exiting: it is left to exit. Otherwise (an error, an interrupt of the parent) one still running is
    ended with SIGTERM."""
    for pid in workers:
        try:
            if not finished and os.waitpid(pid, os.WNOHANG)[0] == 0:
                os.kill(pid, signal.SIGTERM)
            os.waitpid(pid, 0)
        except ChildProcessError:  # waited for already
            pass


# -- the pipes -------------------------------------------------------------------------------------
# Each worker's messages cross in a pipe of its own, each one pickled after its length, as multiprocessing's
# connections frame them; without multiprocessing itself, whose 30 modules would take 2 MB in every process of -j
# and about 10 ms to import.
HEADER = struct.Struct("!Q")


def _pipe():
    """A new pipe: (the parent's end, the worker's end)."""
    read_end, write_end = os.pipe()
    return _Receiver(read_end), _Sender(write_end)


class _Sender:
    """A worker's end of its pipe."""

    __slots__ = ("fd",)

    def __init__(self, fd):
        self.fd = fd

    def send(self, message):
        data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
        write_all(self.fd, [HEADER.pack(len(data)), data], HEADER.size + len(data))

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class _Receiver:
    """The parent's end of a worker's pipe: ``recv`` raises EOFError where the worker ended without a whole message."""

    __slots__ = ("file",)

    def __init__(self, fd):
        self.file = os.fdopen(fd, "rb")

    def fileno(self):
        return self.file.fileno()

    def recv(self):
        header = self.file.read(HEADER.size)
        if len(header) < HEADER.size:
            raise EOFError
        size = HEADER.unpack(header)[0]
        data = self.file.read(size)
        if len(data) < size:
            raise EOFError
        return pickle.loads(data)

    def close(self):
        self.file.close()


def _widen(conn):
    """Let a worker run up to PIPE_BYTES of output ahead of the parent: the parent takes chunk k from every
    worker before chunk k + 1 from any, so with the default 64 KiB a worker whose frames of the moment cost
    less waits for the other's. Where the system refuses (or has no such call), the pipe stays as it is."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if set_size is None:
        return
    try:
        fcntl.fcntl(conn.fileno(), set_size, PIPE_BYTES)
    except OSError:
        pass


class _Ring:
    """Shared memory that a worker's frames' text crosses in: the worker copies each text in (``place``) and its chunk
    says only where the text lies; the parent writes it out from there (``view``). Through the pipe each text would
    be copied four times (pickled, into the pipe, out of it, unpickled).

    The worker writes at ``head``, a count of the bytes it has moved past, wrapping round; the parent acknowledges,
    after each round it has written out, the head that a worker's chunk of it gave (``release``), through a pipe of
    its own, which the worker reads only when it finds no room. A text that does not fit in what is free is sent
    inside the chunk, as before the ring: the worker never waits for the parent here, and the pipe to the parent
    holds it back as it did. The acknowledgements are written without blocking: one that finds the pipe full is
    dropped, as the worker has unread ones there already and a later one says the same and more."""

    __slots__ = ("size", "memory", "view", "head", "released", "acks", "ack_sender")

    def __init__(self, size):
        self.size = size
        self.memory = mmap.mmap(-1, size)  # anonymous and shared: a forked worker writes what the parent reads
        self.view = memoryview(self.memory)
        self.head = 0      # the worker's: bytes moved past, from the first text on
        self.released = 0  # the worker's: the head the parent acknowledged last, as far as it knows
        self.acks, self.ack_sender = os.pipe()
        os.set_blocking(self.acks, False)
        os.set_blocking(self.ack_sender, False)

    def keep_writer(self):
        """In the worker: its end of the acknowledgements only."""
        self.ack_sender = _closed_fd(self.ack_sender)

    def keep_reader(self):
        """In the parent: its end of the acknowledgements only."""
        self.acks = _closed_fd(self.acks)

    def place(self, text):
        """Copy ``text`` in where the parent has written out what was there; return where it starts, or -1 where no
        such room is free."""
        length = len(text)
        start = self._room(length)
        if start < 0:
            return -1
        self.view[start:start + length] = text
        self.head += length
        return start

    def _room(self, length):
        """Where ``length`` bytes may go, in one piece (the ring's end skipped where they do not fit before it), or
        -1: each byte up to the released head has been written out, and the ring holds ``size`` bytes past it (any
        ``size`` once all are)."""
        if length > self.size:
            return -1
        start = self.head % self.size
        skip = self.size - start if start + length > self.size else 0
        if self.head + skip + length - self.released > self.size:
            self._read_acks()
            if self.head != self.released and self.head + skip + length - self.released > self.size:
                return -1
        self.head += skip
        return 0 if skip else start

    def _read_acks(self):
        while True:
            try:
                data = os.read(self.acks, ACK.size * 512)
            except BlockingIOError:
                return
            if len(data) < ACK.size:  # the parent has ended
                return
            self.released = ACK.unpack_from(data, len(data) - ACK.size)[0]

    def release(self, head):
        """In the parent: the worker's text up to ``head`` (a chunk's) is written out."""
        try:
            os.write(self.ack_sender, ACK.pack(head))
        except OSError:  # the pipe is full (a later acknowledgement will do), or the worker has ended
            pass

    def close(self):
        self.acks = _closed_fd(self.acks)
        self.ack_sender = _closed_fd(self.ack_sender)
        try:
            self.view.release()
            self.memory.close()
        except BufferError:  # a slice of it is still held (an interrupted write): the process's end frees it
            pass


ACK = struct.Struct("=Q")  # an acknowledgement: 8 bytes, written whole (a pipe does not split a write this small)


def _closed_fd(fd):
    if fd >= 0:
        os.close(fd)
    return -1


class _Stop:
    """Ctrl-C under ``-j``. The workers ignore SIGINT; the parent takes it between chunks (``take_ctrl_c``: a Ctrl-C
    that comes during a frame or a merge is held until it is done, as one process holds it over a frame). All stop
    after the same chunk, the furthest that any worker had reached, so that the output is one process's up to that
    chunk's last frame, then what the end of the capture concludes there.

    The parent asks in shared memory (``asking``). A worker marks the chunk it sends next after seeing the question and
    waits for the answer: the last chunk's end, which the parent names (``name``) once it has read a marked chunk, or
    the end, from every worker. A worker does not go past a marked chunk without the answer, so none has gone past
    the chunk named."""

    __slots__ = ("memory", "guard", "parent")

    def __init__(self):
        self.memory = mmap.mmap(-1, LAST.size + 8)  # anonymous and shared: made before the workers are forked
        self.guard = None
        self.parent = os.getpid()

    def take_ctrl_c(self):
        """In the parent, after the forks: SIGINT's handler holds a Ctrl-C for ``asking`` (none where SIGINT is not
        Python's default: the Ctrl-C then raises as it comes)."""
        self.guard = defer_interrupt(True)

    def restore(self):
        if self.guard is not None:
            self.guard.restore()

    def interrupted(self):
        return self.guard is not None and self.guard.pending

    def asking(self):
        """Whether the run is to stop: in the parent, whether a Ctrl-C came (it asks the workers then)."""
        if self.guard is not None:
            take_signals()  # a Ctrl-C that came while compiled code ran is held now
        if self.interrupted() and not self.memory[0]:
            self.memory[0] = 1
        return self.memory[0] != 0

    def name(self, last):
        """In the parent: every process stops after the chunk that ends at frame ``last``."""
        LAST.pack_into(self.memory, 8, last)

    def named(self):
        return self._last() != 0

    def ends_after(self, chunk_end, marked):
        """Whether the process stops after its chunk that ends at frame ``chunk_end``, just sent (``marked``: the
        question was seen before it was; a worker then waits for the answer)."""
        last = self._last()
        while marked and not last:
            if os.getppid() != self.parent:  # the parent is gone: nobody reads what would follow
                return True
            time.sleep(0.001)
            last = self._last()
        return last > 0 and chunk_end >= last

    def _last(self):
        """The last chunk's end frame as named; 0 until it is."""
        return LAST.unpack_from(self.memory, 8)[0]


LAST = struct.Struct("=q")  # the last chunk's end frame: 0 until named
TO_THE_END = 1 << 62        # named where a worker has reached the capture's end: every process goes on to it


# -- the parent ------------------------------------------------------------------------------------
def _printer(args, out):
    return Printer(out, format=args.format, verbose=args.verbose, hexdump=args.hex, color=args.color == "always",
                   stats=args.stats, quiet=args.quiet, fields=args.field, field_options=args.field_options)


class _Merger:
    """The parent's side of the run: each chunk of its own share (worker 0's), merged with the other workers' chunks
    of the same frame numbers, is written and its messages counted by the abuse analysis; then the ends."""

    def __init__(self, args, printer, receivers, rings, stop):
        self.args, self.printer, self.receivers, self.rings = args, printer, receivers, rings
        self.stop = stop
        self.early = [[] for _ in receivers]  # each worker's messages read ahead while the stop was named
        self.progress = Progress(args.files) if on_terminal() else None
        # The parent's own session concludes the run: the abuse analysis, which it counts itself from every
        # worker's messages in frame order (exactly as one process), and the records that analysis writes.
        self.concluded = Session(printer, decode_as=args.decode_as, display_filter=args.filter, stats=args.stats,
                                 fail_on=args.fail_on, **abuse_options(args))

    def deliver(self, own):
        """Worker 0's message (a chunk, or its end), with the others' of the same round; the exit code at the end."""
        take_signals()
        messages = [own, *(self._next(worker) for worker in range(len(self.receivers)))]
        if len({message[0] for message in messages}) > 1:  # they read the same frames: never expected
            raise UsageError("the workers of -j fell out of step; run without -j")
        if own[0] == "end":
            return self._end([message[1] for message in messages])
        printer = self.printer
        texts = own[1]
        for message, ring in zip(messages[1:], self.rings):
            texts = texts + _placed(message[1], ring.view)
        texts.sort(key=itemgetter(0))
        _write(printer.out, printer.json, (text for _, text in texts))
        printer.out.flush()  # a chunk is a batch already: keep no more than one in memory
        for message, ring in zip(messages[1:], self.rings):
            ring.release(message[4])
        _count(self.concluded.pipeline.traffic, messages)
        if own[5] and not self.stop.named():
            self._name_last(messages)
        if self.progress is not None:
            self.progress.show(own[6], *own[2])
        return None

    def _next(self, worker):
        early = self.early[worker]
        return early.pop(0) if early else _receive(self.receivers[worker], worker + 1)

    def _name_last(self, messages):
        """The parent took a Ctrl-C: read each worker's messages up to its first marked chunk (or its end), and name
        the furthest chunk any reached as the last (see _Stop). What is read ahead is merged in its round."""
        last = messages[0][6]  # the end of this round's chunks
        for worker, message in enumerate(messages[1:]):
            ahead = self.early[worker]
            while not message[5]:
                message = _receive(self.receivers[worker], worker + 1)
                ahead.append(message)
                if message[0] == "end":  # it read the whole capture: so will every process
                    self.stop.name(TO_THE_END)
                    return
            last = max(last, message[6])
        self.stop.name(last)

    def _end(self, ends):
        args, printer, concluded = self.args, self.printer, self.concluded
        if self.progress is not None:
            self.progress.done()
        finished = sorted((item for end in ends for item in end["finished"]), key=itemgetter(0))
        _write(printer.out, printer.json, (text for _, text in finished))
        traffic = concluded.pipeline.traffic
        traffic.finish()
        concluded.conclude(traffic)
        stats = _merged_stats(ends, concluded.stats) if args.stats else None
        printer.close(stats, _merged_analyzers(ends, traffic))
        failed = first_failure([*(end["failed"] for end in ends), concluded.failed])
        if not self.stop.interrupted():  # as one process: the finding a filter hid first, then the files' errors
            explain_failure(failed, args.filter is not None)
        for error in ends[0]["errors"]:
            tell(str(error))
        if ends[0]["errors"]:
            return 2
        return 1 if failed else 0


def _receive(conn, index):
    try:
        message = conn.recv()
    except EOFError:
        take_signals()  # a Ctrl-C that ended the worker is the parent's too: the run was interrupted, nothing failed
        message = ("error", "it stopped without a word")
    if message[0] == "error":
        raise UsageError(f"worker {index} of -j failed: {message[1]}")
    return message


def _placed(items, view):
    """A worker's chunk of (frame number, text) with each text that crossed in its ring read there."""
    return [item if len(item) == 2 else (item[0], view[item[1]:item[1] + item[2]]) for item in items]


def _write(out, json, texts):
    """Workers send the UTF-8 of whole lines: of text, or of JSON. The output takes each frame's as it is (it writes
    its batches with writev): a chunk's are not joined into one more copy of them."""
    if json is None or json.lines:
        write_bytes = out.write_bytes
        if write_bytes is not None:
            for text in texts:
                write_bytes(text)
        else:
            out.write(b"".join(texts).decode())
        return
    for text in texts:
        for line in bytes(text).split(b"\n"):  # UTF-8 has no newline byte inside a character, JSON none inside a string
            if line:
                json.encoded_utf8(line)


def _merged_stats(ends, concluded):
    """The workers' counts, and those of the parent's records (``concluded``: the abuse analysis's)."""
    merged = StatsCollector()
    for end in ends:
        merged.merge(end["stats"])
    merged.merge(concluded)
    merged.first_ts, merged.last_ts = ends[0]["clock"]
    return merged


def _count(traffic, messages):
    """The messages of a chunk's frames, from every worker, counted by the abuse analysis in frame order (a frame's
    messages come from one worker, in their order). Each worker's are a flat list (see ``_flat``) in frame order:
    they are merged, taking the next message of the worker whose next one has the lowest frame number."""
    flats = [message[3] for message in messages]
    at = _positions(len(flats))
    while True:
        worker = _next_worker(flats, at)
        if worker < 0:
            return
        flat, index = flats[worker], at[worker]
        at[worker] = index + EVENT_FIELDS
        traffic.count(flat[index], flat[index + 1], intern(flat[index + 2]), flat[index + 3],
                      _shared(flat[index + 4], flat[index + 5]), _shared(flat[index + 6], flat[index + 7]),
                      flat[index + 8], flat[index + 9], flat[index + 10])


def _next_worker(flats, at):
    """The worker whose next message (at ``at[worker]`` of its flat list) has the lowest frame number; -1 where
    every message is counted."""
    best, lowest = -1, 0
    for worker in range(len(flats)):
        flat = flats[worker]
        if at[worker] < len(flat):
            frame = flat[at[worker]]
            if best < 0 or frame < lowest:
                best, lowest = worker, frame
    return best


def _positions(count):
    return array("q", bytes(8 * count))


def _shared(address, port):
    """The parent's one object for an (address, port) endpoint, and for its address, while the address keeps its
    slot (as the pcap reader keeps an address's text). Another worker's endpoints arrive unpickled, new objects
    with every chunk: without this, each entry of the abuse analysis's tables (its addresses, pairs, open queries,
    the peers they count) would hold a copy of its own where one process's entries share one, and the parent's
    memory would grow with the capture up to the tables' limits."""
    slot = hash(address) & (SHARED_SLOTS - 1)
    kept = _endpoints[slot]
    if kept is not None and kept[0] == address:
        if kept[1] == port:
            return kept
        address = kept[0]
    endpoint = _endpoints[slot] = (address, port)
    return endpoint


SHARED_SLOTS = 4096  # a power of two
_endpoints = [None] * SHARED_SLOTS


def _merged_analyzers(ends, traffic):
    """The workers' protocol analyzers folded into the first's, then the parent's abuse analysis ``traffic``, as
    ``Session.analyzers`` gives them (the workers send theirs only for ``--stats``)."""
    analyzers = ends[0]["analyzers"]
    for end in ends[1:]:
        for key, analyzer in analyzers.items():
            analyzer.merge(end["analyzers"][key])
    return {**analyzers, ABUSE: traffic} if analyzers else analyzers


# -- a worker --------------------------------------------------------------------------------------
class _Text:
    """The worker's output, collected per frame and taken after each, as UTF-8: it crosses to the parent and
    goes out without being decoded and encoded again. ``write_bytes`` takes what is UTF-8 already (orjson's
    records, the summary's lines); text is encoded here, in the worker rather than in the parent."""

    __slots__ = ("parts", "write_bytes")

    def __init__(self):
        self.parts = []
        self.write_bytes = self.parts.append

    def write(self, text):
        self.parts.append(text.encode("utf-8", "replace"))

    def take(self):
        text = b"".join(self.parts)
        self.parts.clear()
        return text

    def flush(self):
        pass

    def isatty(self):
        return False


# The messages a worker's abuse analysis keeps for the parent (``TrafficAnalyzer.feed``'s tuples) cross as one flat list
# a chunk, EVENT_FIELDS items a message: its frame, time, protocol, name, sender's address and port, receiver's address
# and port, token, size and wire bytes. Pickled and unpickled without a tuple for each message and its two endpoints.
EVENT_FIELDS = 11


def _flat(events):
    """``events``, a worker's messages of a chunk, as the flat list that crosses to the parent."""
    flat = []
    for frame, ts, protocol, name, sender, receiver, token, size, wire in events:  # appended one by one: no tuple
        flat.append(frame)
        flat.append(ts)
        flat.append(protocol)
        flat.append(name)
        flat.append(sender[0])
        flat.append(sender[1])
        flat.append(receiver[0])
        flat.append(receiver[1])
        flat.append(token)
        flat.append(size)
        flat.append(wire)
    return flat


def _worker(index, args, partition, conn, ring, stop):
    try:
        conn.send(("end", _work(index, args, partition, conn.send, ring, stop)))
    except BrokenPipeError:  # the parent is gone
        pass
    except Exception as exc:  # reported by the parent as one line, never as a traceback
        try:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
        except (OSError, ValueError):
            pass
    finally:
        conn.close()
        os._exit(0)


def _shows_fields(args):
    """Whether the view writes each frame's fields or bytes (-V, -x, JSON): text of a few KB a frame."""
    return bool(args.verbose or args.hex or args.format in ("json", "jsonl"))


def _merge_share(args):
    if args.hex:
        return MERGE_SHARE_HEX
    return MERGE_SHARE_FIELDS if _shows_fields(args) else MERGE_SHARE


def _chunk_frames(args):
    return CHUNK_FIELDS if _shows_fields(args) else CHUNK


def _own_args(args):
    """The parent's copy of the options for its share: ``_work`` changes them as a worker's, and the merge
    writes with the originals."""
    own = copy.copy(args)
    own.field_options = copy.copy(args.field_options)
    return own


def _work(index, args, partition, send, ring, stop):
    """Dissect the frames that worker ``index`` owns; ``send`` takes each chunk's message (its texts cross in
    ``ring``, the parent's own are kept as they are), until the capture's end or the chunk ``stop`` names; return
    the end's."""
    if args.format == "json":
        args.format = "jsonl"
    args.field_options.header = False  # the parent writes the one header line
    sink = _Text()
    printer = _printer(args, sink)
    session = Session(printer, decode_as=args.decode_as, display_filter=args.filter, tree=printer.needs_tree,
                      stats=args.stats, fail_on=args.fail_on, **abuse_options(args))
    traffic = session.pipeline.traffic
    traffic.events = []  # the parent counts them (see _count)
    frames_a_chunk = _chunk_frames(args)
    chunk, frames, size, number = [], 0, 0, 0
    clock = [None, None]
    files = CaptureFiles(args.files)
    for frame in files:
        number = frame.number
        if clock[0] is None:
            clock[0] = frame.ts
        clock[1] = frame.ts
        pair, packet = address_pair(frame)
        if partition.owner(frame, pair) != index:
            session.skip(frame)
        else:
            session.frame(frame, packet)
            text = sink.take()
            if text:
                start = ring.place(text) if ring is not None and len(text) >= RING_TEXT else -1
                chunk.append((number, text) if start < 0 else (number, start, len(text)))
        frames += 1
        size += len(frame.data)
        if frames >= frames_a_chunk or size >= CHUNK_BYTES:  # the chunk ends at this frame, in every process
            marked = stop.asking()
            send(("chunk", chunk, files.position(), _flat(traffic.events), ring.head if ring is not None else 0,
                  marked, number))
            if stop.ends_after(number, marked):  # the run stops after the chunk just sent
                break
            chunk, frames, size = [], 0, 0
            traffic.events = []
    else:
        send(("chunk", chunk, files.position(), _flat(traffic.events), ring.head if ring is not None else 0,
              stop.asking(), number))
    finished = []
    for rec in sorted(session.pipeline.finish(), key=finish_order):
        session.ending(rec)
        text = sink.take()
        if text:
            finished.append((finish_order(rec), text))
    analyzers = session.pipeline.analyzers if session.stats is not None else {}
    return {"finished": finished, "errors": files.errors, "failed": session.failed, "stats": session.stats,
            "analyzers": analyzers, "clock": clock}
