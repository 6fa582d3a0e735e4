"""The HTML report (``dissect --html``): its data, its overview, and its panes driven in headless Chromium.

The browser tests need Debian's chromium and chromium-driver and selenium (``.ci/run`` installs them);
they skip, saying why, where those are missing. One browser serves the whole module.
"""

import base64
import gzip
import json
import re
import struct
from collections import Counter

import pytest

import dissect
from dissect.capture.sources import CaptureFiles
from dissect.core.fmt import endpoint
from dissect.render import html as report_html
from dissect.render.html import HtmlReport, write_report
from dissect.render.svgplot import nice_ticks
from dissect.render.text import safe
from dissect.session import Session

from conftest import capture, run_cli

import report_screenshot as browser_tools  # tools/, on the path by conftest

HOSTILE_HTML = "</script><img src=x onerror=alert(1)>"
HOSTILE_NAME = '\u202eevil</script><script>window.pwned=1</script><img src=x onerror="window.pwned=2">'
HOSTILE_CLIENT = '"onmouseover=window.pwned=3 x="</textarea><b>'
HOSTILE_MAP = "</style><svg onload=window.pwned=4>"
SMALL_CHUNKS = 16  # rows per chunk in these reports: several chunks even for the bundled captures
# The rows' trees and bytes end their chunk at this many bytes of JSON too: chunks of a few rows, most ending between
# the rows' chunks' ends, which the page finds by their first rows.
SMALL_DETAILS = 5000


# -- helpers ---------------------------------------------------------------------------------------------
def run_report(path, captures, limit=report_html.DEFAULT_LIMIT):
    """Write a report as ``dissect --html`` will (a Session building trees, its analyzers watched)."""
    report = HtmlReport(path, limit=limit, sources=captures)
    session = Session(report, tree=True, analyzer_stats=True)
    report.watch(session.analyzers)
    for frame in CaptureFiles(captures):
        session.frame(frame)
    session.finish()
    report.close(session.analyzers)
    return report


def page_blobs(path):
    """The page's text, its settings, and each blob's chunks in order (base64 strings)."""
    page = open(path, encoding="utf-8").read()
    settings = re.search(r'<script type="application/json" id="dissect-page">(.*?)</script>', page, re.S)
    found = {"page": json.loads(settings.group(1))}
    for name in ("index", "text", "detail", "members"):
        block = rf'<script type="application/octet-stream" id="dissect-{name}-(\d+)">([^<]*)</script>'
        chunks = re.findall(block, page)
        assert [int(index) for index, _ in chunks] == list(range(found["page"]["chunks"][name]))
        found[name] = [chunk for _, chunk in chunks]
    return page, found


def unpack(chunk):
    return gzip.decompress(base64.b64decode(chunk))


def json_rows(chunks):
    return [row for chunk in chunks for row in json.loads(unpack(chunk))]


def index_rows(chunks):
    """(time, number, length, kind, severity, protocol) per row, from the binary index."""
    rows = []
    for chunk in chunks:
        raw = unpack(chunk)
        n = len(raw) // 19
        times = struct.unpack(f"<{n}d", raw[:8 * n])
        numbers = struct.unpack(f"<{n}I", raw[8 * n:12 * n])
        lengths = struct.unpack(f"<{n}I", raw[12 * n:16 * n])
        rows += zip(times, numbers, lengths, raw[16 * n:17 * n], raw[17 * n:18 * n], raw[18 * n:19 * n])
    return rows


def records(path):
    with dissect.open(path) as cap:
        return list(cap)


def frame_record(path, number):
    return next(r for r in records(path) if r.kind == "frame" and r.number == number)


def innermost_field(record, byte):
    """The field the page must select for a click on ``byte``: the deepest covering it, then the shortest
    (generated fields and fields without bytes never)."""
    best = None
    for msg in record.messages:
        if msg.offset is None:
            continue
        stack = [(field, 1) for field in reversed(msg.fields)]
        while stack:
            field, depth = stack.pop()
            start = msg.offset + field.offset
            if not field.generated and field.length > 0 and start <= byte < start + field.length:
                if best is None or (depth, -field.length) > best[0]:
                    best = ((depth, -field.length), field)
            stack += [(child, depth + 1) for child in reversed(field.children)]
    return best[1]


def hostile_capture(path):
    import capkit
    import netquake_peer as nq
    import teeframe_peer as tf
    client, server = ("10.0.0.7", 40000), ("10.0.0.1", 26000)
    browser, tee = ("10.0.0.8", 50000), ("10.0.0.2", 8303)
    packets = [(client, server, nq.ccreq_server_info()),
               (server, client, nq.ccrep_server_info("10.0.0.1:26000", HOSTILE_HTML, "e1m1</textarea>", 3, 8)),
               (browser, tee, tf.gie3(0x1234, 0x2A)),
               (tee, browser, tf.iext(0x12342A, clients=[(HOSTILE_CLIENT, "<!--", 276, 5, 1)], name=HOSTILE_NAME,
                                      map_name=HOSTILE_MAP))]
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + i / 1000, capkit.ethernet(capkit.udp_packet(*src, *dst, data)))
                             for i, (src, dst, data) in enumerate(packets)])
    return str(path)


# -- the page's data, read back in Python ---------------------------------------------------------------------
@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(report_html, "CHUNK_ROWS", SMALL_CHUNKS)
    monkeypatch.setattr(report_html, "DETAIL_BYTES", SMALL_DETAILS)


def test_rows_carry_the_frames_fields_and_bytes(tmp_path, small_chunks):
    path = tmp_path / "nq.html"
    run_report(str(path), [capture("netquake-session.pcap")])
    _, blobs = page_blobs(path)
    index, texts, details = index_rows(blobs["index"]), json_rows(blobs["text"]), json_rows(blobs["detail"])
    assert blobs["page"]["rows"] == len(index) == len(texts) == len(details) == 58  # 54 frames, 4 walks
    assert len(blobs["index"]) == 4  # 58 rows in chunks of 16
    starts, sizes = blobs["page"]["detail_starts"], [len(json.loads(unpack(chunk))) for chunk in blobs["detail"]]
    assert len(starts) == len(sizes) > 4 and starts == [sum(sizes[:i]) for i in range(len(sizes))]
    assert any(start % SMALL_CHUNKS for start in starts)  # some end between the rows' chunks' ends
    assert [row[1] for row in index if row[3] == 0] == list(range(1, 55))
    t, number, length, kind, severity, protocol = index[1]
    assert (number, length, kind, severity) == (2, 91, 0, 0)
    assert blobs["page"]["protocols"][protocol] == "NetQuake"
    assert texts[1] == ["127.0.0.1:26000", "127.0.0.1:44806",
                        'CCREP_SERVER_INFO "dissect test server" map=e1m1 players 3/8', ""]
    frame = details[1]
    assert base64.b64decode(frame["d"]) == bytes(frame_record(capture("netquake-session.pcap"), 2).data)
    assert [layer[1:] for layer in frame["l"]] == [[0, 14, "eth"], [14, 20, "ip"], [34, 8, "udp"]]
    message = frame["m"][0]
    assert (message["o"], message["len"]) == (42, 49)
    keys = blobs["page"]["keys"]
    fields = {keys[f[0]][0]: f[1:] for f in message["fs"]}
    assert fields["netquake.control.host_name"] == [21, 20, '"dissect test server"']
    assert fields["netquake.request_in"] == [0, 0, "1"]
    assert keys[message["fs"][-1][0]] == ["netquake.response_time", "Response time", 1]


def test_analysis_rows_link_their_frames(tmp_path, small_chunks):
    path = tmp_path / "nq.html"
    run_report(str(path), [capture("netquake-session.pcap")])
    _, blobs = page_blobs(path)
    index, texts = index_rows(blobs["index"]), json_rows(blobs["text"])
    walks = [(seq, row) for seq, row in enumerate(index) if row[3] == 1]
    expected = [r.frames for r in records(capture("netquake-session.pcap")) if r.kind == "analysis"]
    assert [texts[seq][4] for seq, _ in walks] == expected
    assert [row[2] for _, row in walks] == [len(frames) for frames in expected]  # length: frames spanned
    assert json_rows(blobs["members"]) == [[seq, texts[seq][4]] for seq, _ in walks]


@pytest.mark.parametrize("view", [[], ["-T", "jsonl"], ["-T", "json"], ["-V"]])
def test_the_report_beside_another_view_gets_every_record(tmp_path, view):
    """``--html`` with the summary, JSON or -V on standard output: the report has every frame and analysis row that
    it has alone (the views called directly where one is alone must not skip it)."""
    path = capture("netquake-session.pcap")
    alone, beside = tmp_path / "alone.html", tmp_path / "beside.html"
    make_report(str(alone), path)
    code, out, err = run_cli(*view, "--html", str(beside), path)
    assert code == 0 and out and err == ""
    rows = [index_rows(page_blobs(page)[1]["index"]) for page in (alone, beside)]
    assert rows[0] == rows[1]
    assert [row[3] for row in rows[1]].count(1) == len([r for r in records(path) if r.kind == "analysis"]) > 0
    assert len(rows[1]) == len(records(path))


def test_limit_keeps_the_first_frames_and_their_analyses(tmp_path):
    path = tmp_path / "nq.html"
    run_report(str(path), [capture("netquake-session.pcap")], limit=5)
    page, blobs = page_blobs(path)
    index = index_rows(blobs["index"])
    assert [row[1] for row in index if row[3] == 0] == [1, 2, 3, 4, 5]
    starts = [r.frames[0] for r in records(capture("netquake-session.pcap")) if r.kind == "analysis"]
    assert len([row for row in index if row[3] == 1]) == len([s for s in starts if s <= 5]) == 1
    assert (blobs["page"]["kept"], blobs["page"]["frames"]) == (5, 54)
    assert "the first 5 of 54 frames (--html-limit 5)" in page
    assert '<p class="big" id="frame-count">54</p>' in page  # the overview counts every frame


def test_a_record_that_cannot_be_written_costs_its_own_row(tmp_path):
    from dissect.core import AnalysisRecord
    path = tmp_path / "broken.html"
    report = HtmlReport(str(path), sources=[capture("netquake-session.pcap")])
    session = Session(report, tree=True)
    for frame in CaptureFiles([capture("netquake-session.pcap")]):
        session.frame(frame)
    report.analysis(AnalysisRecord("netquake", "broken", [1], lambda: 1 / 0, [], "cannot be built"))
    report.analysis(AnalysisRecord("netquake", "odd", [2], {"time": float("nan"), "name": "a\u202eb"}, [], "odd"))
    session.finish()
    report.close(session.analyzers)
    details = json_rows(page_blobs(path)[1]["detail"])
    broken = next(d for d in details if d.get("error"))
    assert broken == {"error": "this row could not be written: ZeroDivisionError: division by zero"}
    odd = next(d for d in details if d.get("n") == "odd")
    assert odd["r"] == {"time": "nan", "name": "a\\u202eb"}


def test_an_empty_capture_gives_a_page(tmp_path):
    import capkit
    empty = tmp_path / "empty.pcap"
    capkit.write_pcap(str(empty), [])
    path = tmp_path / "empty.html"
    stats = write_report(str(path), [str(empty)])
    page, blobs = page_blobs(path)
    assert stats["frames"] == blobs["page"]["rows"] == 0
    assert blobs["page"]["chunks"] == {"index": 0, "text": 0, "detail": 0, "members": 0}
    assert "<p>No findings.</p>" in page and "No server answered a query in this capture." in page


def test_a_finding_code_met_at_two_severities_has_a_row_for_each_with_its_own_frames(tmp_path):
    """TeeFrame's bad_request_length: a note for the long requests of frames 1 and 2, an error for the short one of
    frame 3. The findings table has a row for each severity (as --stats counts them), each linking its own frames."""
    import capkit
    import teeframe_peer as tf
    long_request, short_request = tf.gie3(0x1234, 0x2A) + b"\0" * 8, tf.gie3(0x1234, 0x2A)[:14]
    source = tmp_path / "two.pcap"
    capkit.write_pcap(source, [(capkit.DEFAULT_TS + n * 0.1, capkit.ethernet(capkit.udp_packet(
        "10.0.0.1", 40000 + n, "10.0.1.1", 8303, payload)))
        for n, payload in enumerate([long_request, long_request, short_request])])
    path = tmp_path / "two.html"
    write_report(str(path), [str(source)])
    page = open(path, encoding="utf-8").read()
    rows = re.findall(r'<tr class="sev-\w+"><td>(\w+)</td><td><code>teeframe\.bad_request_length</code></td>'
                      r'<td class="num" data-v="(\d+)">\d+</td><td>(.*?)</td>', page)
    assert [(severity, count, re.findall(r">(\d+)</a>", links)) for severity, count, links in rows] == [
        ("error", "1", ["3"]), ("note", "2", ["1", "2"])]


def test_page_is_self_contained(tmp_path):
    import hashlib
    path = tmp_path / "nq.html"
    write_report(str(path), [capture("netquake-session.pcap")])
    page = path.read_text(encoding="utf-8")
    assert not re.search(r'(?:src|href|action)\s*=\s*"(?!#)', page)  # links are fragments only
    assert re.findall(r"https?://[^\s\"'<]+", page) == ["http://www.w3.org/2000/svg"] * page.count("<svg ")
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert policy.startswith("default-src 'none'; script-src 'sha256-")
    script = page[page.rindex("<script>") + len("<script>"):page.rindex("</script>")]
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    assert f"'sha256-{digest}'" in policy


def test_packet_strings_are_escaped_in_the_source(tmp_path):
    path = tmp_path / "hostile.html"
    write_report(str(path), [hostile_capture(tmp_path / "hostile.pcap")])
    page = path.read_text(encoding="utf-8")
    scripts = re.findall(r"<script([^>]*)>", page)
    assert scripts[0] == ' type="application/json" id="dissect-page"' and scripts[-1] == ""  # settings ... code
    assert all(s.startswith(' type="application/octet-stream" id="dissect-') for s in scripts[1:-1])
    for raw in ("<img", "<b>", "</textarea>", "<svg onload", "<!--", "\u202e"):
        assert raw not in page
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in page  # the server table's NetQuake name
    assert "\\u202eevil&lt;/script&gt;&lt;script&gt;window.pwned=1" in page  # bidi override shown escaped


# -- the overview's numbers ----------------------------------------------------------------------------------
def test_traffic_counts_requests_and_replies(tmp_path):
    report = run_report(str(tmp_path / "nq.html"), [capture("netquake-session.pcap")])
    counted = {series: sum(bins.values()) for series, bins in report.overview.traffic.bins.items()}
    frames = [r for r in records(capture("netquake-session.pcap")) if r.kind == "frame" and r.messages]
    replies = sum(1 for r in frames if r.messages[0].name.startswith("CCREP_"))
    assert counted == {("NetQuake", "replies"): replies, ("NetQuake", "requests"): len(frames) - replies}
    assert (replies, len(frames) - replies) == (26, 28)  # requests include the unreliable and data packets


def test_response_times_and_players_follow_the_analyzers(tmp_path):
    report = run_report(str(tmp_path / "nq.html"), [capture("netquake-session.pcap")])
    histogram = report.overview.response_times["NetQuake"]
    stats = run_cli("--stats", "-T", "json", capture("netquake-session.pcap"))[1]
    answered = json.loads(stats)[-1]["transactions"]["netquake"]["answered"]
    assert sum(histogram.counts.values()) == answered == 26
    report = run_report(str(tmp_path / "tee.html"), [capture("teeframe-session.pcap")])
    servers = [r for r in json.loads(run_cli("--stats", "-T", "json", capture("teeframe-session.pcap"))[1])
               if r["kind"] == "server"]
    samples = report.overview.servers.samples
    assert sorted(server for _, server in samples) == sorted(s["server"] for s in servers)
    for server in servers:
        assert samples[("teeframe", server["server"])][-1][1:] == (server["players"], server["max_players"])
    assert [s[1:] for s in samples[("teeframe", "127.0.0.1:8304")]] == [(3, 64), (3, 16)]  # iext, then inf3


def test_nice_ticks():
    assert nice_ticks(0, 27) == [0, 10, 20]
    assert nice_ticks(0, 100) == [0, 20, 40, 60, 80, 100]
    assert nice_ticks(-3, 3) == [-2, 0, 2]
    assert nice_ticks(0, 1.7976931348623157e308) == [0.0, 5e307, 1e308, 1.5e308]  # the last float: none past it
    assert nice_ticks(-1.7e308, 1.7e308) == [-1.7e308] and nice_ticks(0, 5e-324) == [0]  # spans a float cannot step


def test_a_player_count_beyond_a_float_is_drawn_at_the_top(tmp_path):
    """A Decimal String may hold 4,000 digits: a count of 10**309 players (more than a float holds) is plotted
    at the float's end, the report written, the run as clean as the other views'."""
    import capkit
    import teeframe_peer as tf
    browser, tee = ("10.0.0.8", 50000), ("10.0.0.2", 8303)
    packets = [(browser, tee, tf.gie3(0x1234, 0x2A)), (tee, browser, tf.iext(0x12342A, players=10 ** 309))]
    source = tmp_path / "huge.pcap"
    capkit.write_pcap(source, [(capkit.DEFAULT_TS + i / 1000, capkit.ethernet(capkit.udp_packet(*src, *dst, data)))
                               for i, (src, dst, data) in enumerate(packets)])
    out = tmp_path / "huge.html"
    code, text, err = run_cli("--html", out, source)
    assert (code, err) == (0, "")
    assert [line.split()[0] for line in text.splitlines() if line.split()[0].isdigit()] == ["1", "2"]
    page = out.read_text(encoding="utf-8")
    figure = re.search(r'<figure class="players" data-server="10\.0\.0\.2:8303">(.*?)</figure>', page).group(1)
    ticks = re.findall(r'class="tick" text-anchor="end">([^<]*)<', figure)
    assert ticks == ["0", "5e+307", "1e+308", "1.5e+308"]


# -- in the browser ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chromium(tmp_path_factory):
    why = browser_tools.missing_browser()
    if why:
        pytest.skip(f"the browser tests need headless Chromium: {why}")
    driver = browser_tools.start_browser(str(tmp_path_factory.mktemp("chromium-profile")))
    yield driver
    driver.quit()


@pytest.fixture
def browser(chromium):
    """The module's browser; the test fails if a page logged an error (an exception in its script)."""
    chromium.get_log("browser")  # what earlier tests left
    yield chromium
    assert [e["message"] for e in chromium.get_log("browser") if e["level"] == "SEVERE"] == []


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Reports of the bundled captures, written once for the module, in small chunks."""
    folder = tmp_path_factory.mktemp("reports")
    written = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report_html, "CHUNK_ROWS", SMALL_CHUNKS)
        patch.setattr(report_html, "DETAIL_BYTES", SMALL_DETAILS)
        for name in ("netquake-session", "teeframe-session", "teeframe-damaged", "odamex-session"):
            written[name] = str(folder / f"{name}.html")
            write_report(written[name], [capture(f"{name}.pcap")])
        written["hostile"] = str(folder / "hostile.html")
        write_report(written["hostile"], [hostile_capture(folder / "hostile.pcap")])
        import capkit
        capkit.write_pcap(str(folder / "empty.pcap"), [])
        written["empty"] = str(folder / "empty.html")
        write_report(written["empty"], [str(folder / "empty.pcap")])
    return written


def wait(driver, condition, timeout=15):
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(driver, timeout).until(condition)


def open_page(driver, path):
    browser_tools.open_report(driver, path)


def seq_of(driver, number):
    """The row of frame ``number``, scrolling the packet list to it when it is not drawn."""
    find = ("const r = document.querySelector(`#list-rows .row[data-number='${arguments[0]}']`);"
            "return r ? +r.dataset.seq : null")
    found = driver.execute_script(find, number)
    if found is None:
        driver.execute_script("document.getElementById('list').scrollTop = arguments[0] * 20", max(0, number - 5))
        found = wait(driver, lambda d: d.execute_script(find, number))
    return found


def click_row(driver, seq):
    """Scroll the packet list to row ``seq``, click it, and wait for its tree. The rows are redrawn as
    their text arrives, so finding and clicking one is a single call."""
    driver.execute_script("const list = document.getElementById('list'), top = arguments[0] * 20;"
                          "if (top < list.scrollTop || top + 20 > list.scrollTop + list.clientHeight)"
                          "  list.scrollTop = Math.max(0, arguments[0] - 3) * 20", seq)
    wait(driver, lambda d: d.execute_script(
        "const r = document.querySelector(`#list-rows .row[data-seq='${arguments[0]}']`);"
        "if (!r || r.querySelector('.c-info').textContent === '…') return false; r.click(); return true", seq))
    shown(driver, seq)


def shown(driver, seq):
    wait(driver, lambda d: d.execute_script("return document.getElementById('tree').dataset.seq") == str(seq))


def list_row(driver, selector):
    """The data-number of the first row of the packet list matching ``selector`` (read in one call: rows
    are rebuilt as the list changes)."""
    return driver.execute_script("const r = document.querySelector('#list-rows ' + arguments[0]);"
                                 "return r ? r.dataset.number : null", selector)


def highlighted(driver):
    return driver.execute_script(
        "return [...document.querySelectorAll('#hex .b.hl')].map(c => [+c.dataset.s, +c.dataset.i])")


def selected_key(driver):
    return driver.execute_script("const l = document.querySelector('#tree .line.sel'); return l && l.dataset.key")


def test_field_and_bytes_select_each_other(browser, reports):
    from selenium.webdriver.common.by import By
    path = capture("netquake-session.pcap")
    third = frame_record(path, 3)
    msg = third.messages[0]
    flags = msg["netquake.flags"]
    open_page(browser, reports["netquake-session"])
    click_row(browser, seq_of(browser, 3))
    browser.find_element(By.CSS_SELECTOR, '#tree .line[data-key="netquake.flags"]').click()
    start = msg.offset + flags.offset
    assert highlighted(browser) == [[0, i] for i in range(start, start + flags.length)] == [[0, 42], [0, 43]]
    byte = msg.offset + msg["netquake.control.player_number"].offset
    browser.find_element(By.CSS_SELECTOR, f'#hex .b[data-s="0"][data-i="{byte}"]').click()
    assert selected_key(browser) == innermost_field(third, byte).key == "netquake.control.player_number"
    assert highlighted(browser) == [[0, 47]]
    assert "bytes 47-47 of Frame 3" in browser.find_element(By.ID, "statusbar").text


def test_a_reassembled_datagrams_header_marks_no_bytes_of_the_frame(browser, tmp_path):
    """The UDP header of a datagram reassembled from fragments is a layer of the frame that completes it with no
    place in its bytes: selecting it lights none, and the frame's first bytes still select Ethernet."""
    from selenium.webdriver.common.by import By
    import capkit
    from test_reassembly import fragments, tf
    pcap, page = tmp_path / "frag.pcap", tmp_path / "frag.html"
    capkit.write_pcap(pcap, [(capkit.DEFAULT_TS + i, frame) for i, frame in
                             enumerate(fragments(tf.response_packets(0x0101, tf.sample_clients(20))[0]))])
    write_report(str(page), [str(pcap)])
    open_page(browser, str(page))
    click_row(browser, seq_of(browser, 2))
    browser.find_element(By.CSS_SELECTOR, '#tree .line[data-key="udp"]').click()
    assert selected_key(browser) == "udp" and highlighted(browser) == []
    browser.find_element(By.CSS_SELECTOR, '#hex .b[data-s="0"][data-i="3"]').click()
    assert selected_key(browser) == "eth" and highlighted(browser) == [[0, i] for i in range(14)]


def test_the_hex_pane_of_a_frame_past_64_kib_has_five_digit_offsets(browser, tmp_path):
    """As -x and tshark: every row of a frame longer than 64 KiB has its offset in 5 hex digits."""
    import capkit
    payload = bytes(range(256)) * 255 + b"x" * 227  # the largest UDP payload in IPv4: a 65,549-byte frame
    pcap, page = tmp_path / "big.pcap", tmp_path / "big.html"
    capkit.write_pcap(pcap, [(capkit.DEFAULT_TS, capkit.ethernet(capkit.udp_packet("10.0.0.1", 40000, "10.0.0.2",
                                                                                   41000, payload)))])
    write_report(str(page), [str(pcap)])
    open_page(browser, str(page))
    click_row(browser, seq_of(browser, 1))
    offsets = browser.execute_script(
        "return [...document.querySelectorAll('#hex .hexrow .off')].map(o => o.textContent)")
    assert offsets[:3] == ["00000", "00010", "00020"] and {len(offset) for offset in offsets} == {5}


def test_a_byte_selects_the_innermost_field(browser, reports):
    from selenium.webdriver.common.by import By
    record = frame_record(capture("teeframe-session.pcap"), 2)
    msg = record.messages[0]
    clan = [f for f in msg.walk() if f.key.endswith(".clan")][1]  # the second client's clan, two levels down
    byte = msg.offset + clan.offset + 1
    assert innermost_field(record, byte) is clan
    open_page(browser, reports["teeframe-session"])
    click_row(browser, seq_of(browser, 2))
    browser.find_element(By.CSS_SELECTOR, f'#hex .b[data-s="0"][data-i="{byte}"]').click()
    assert selected_key(browser) == clan.key
    start = msg.offset + clan.offset
    assert highlighted(browser) == [[0, i] for i in range(start, start + clan.length)]
    depth = browser.execute_script("let n = 0, e = document.querySelector('#tree .line.sel');"
                                   "while ((e = e.parentElement.closest('.node'))) n++; return n")
    assert depth == 3  # the nodes of the message, the client, the clan


def test_keys_move_through_packets(browser, reports):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    open_page(browser, reports["netquake-session"])
    click_row(browser, seq_of(browser, 3))
    listing = browser.find_element(By.ID, "list")
    listing.send_keys(Keys.ARROW_DOWN)
    shown(browser, seq_of(browser, 4))
    assert list_row(browser, ".row.sel") == "4"
    listing.send_keys(Keys.ARROW_UP, Keys.ARROW_UP)
    shown(browser, seq_of(browser, 2))
    assert browser.find_element(By.CSS_SELECTOR, "#tree .line").text.startswith("Frame 2: 91 bytes on wire")


def test_analysis_rows_and_frames_link_both_ways(browser, reports):
    from selenium.webdriver.common.by import By
    open_page(browser, reports["netquake-session"])
    seq, label = browser.execute_script("const r = document.querySelector('#list-rows .row.ana');"
                                        "return [+r.dataset.seq, r.querySelector('.c-num').textContent]")
    assert label == "↳ 3-8"
    click_row(browser, seq)
    assert browser.find_element(By.CSS_SELECTOR, "#tree .line").text == "Analysis: NetQuake player_walk"
    browser.find_element(By.CSS_SELECTOR, '#tree [data-goto-frame="5"]').click()
    shown(browser, seq_of(browser, 5))
    wait(browser, lambda d: d.execute_script("return document.getElementById('tree').dataset.parts"))
    back = browser.find_element(By.CSS_SELECTOR, "#tree .line.part [data-row]")
    assert int(back.get_attribute("data-row")) == seq


def test_filter_and_sort_the_packet_list(browser, reports):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    rows = records(capture("netquake-session.pcap"))
    frames = [r for r in rows if r.kind == "frame"]
    open_page(browser, reports["netquake-session"])
    status = browser.find_element(By.ID, "list-status")
    browser.find_element(By.ID, "f-text").send_keys("ccrep_rule")
    wanted = sum(1 for r in frames if "ccrep_rule" in r.info.lower())
    wait(browser, lambda d: status.text == f"{wanted} of {len(rows)} rows")
    assert wanted == 16
    browser.find_element(By.ID, "f-clear").click()
    Select(browser.find_element(By.ID, "f-sev")).select_by_value("2")  # notes and above
    noted = sum(1 for r in rows if any(f.severity != "chat" for f in (
        r.all_findings() if r.kind == "frame" else r.findings)))
    wait(browser, lambda d: status.text == f"{noted} of {len(rows)} rows")
    Select(browser.find_element(By.ID, "f-sev")).select_by_value("all")
    length = browser.find_element(By.CSS_SELECTOR, '#list-head [data-col="6"]')
    length.click()
    length.click()  # descending
    longest = max(frames, key=lambda r: r.wirelen)
    wait(browser, lambda d: list_row(d, ".row") == str(longest.number))


@pytest.mark.parametrize("name", ["teeframe-damaged", "odamex-session"])
def test_overview_agrees_with_stats(browser, reports, name, tmp_path):
    from selenium.webdriver.common.by import By
    code, out, _ = run_cli("--stats", "-T", "json", capture(f"{name}.pcap"))
    assert code == 0
    output = json.loads(out)
    stats, servers = output[-1], [r for r in output if r["kind"] == "server"]
    open_page(browser, reports[name])
    assert browser.find_element(By.ID, "frame-count").text == f"{stats['frames']:,}"
    shown_findings = browser.execute_script(
        "return [...document.querySelectorAll('#findings-table tbody tr')].map(tr => [tr.cells[1].textContent,"
        " +tr.cells[2].dataset.v])")
    assert dict(shown_findings) == {f["code"]: f["count"] for f in stats["findings"]}
    table = browser.execute_script(
        "return [...document.querySelectorAll('#servers-table tbody tr')]"
        ".map(tr => [...tr.cells].map(c => c.textContent))")
    expected = [[s["server"], s.get("host_name", s.get("name")), s.get("level_name", s.get("map")),
                 f"{s['players']}/{s['max_players']}", str(s["responses"])] for s in servers]
    assert sorted([row[1], row[2], row[3], row[5], row[7]] for row in table) == sorted(expected)
    by_endpoint = findings_by_endpoint(capture(f"{name}.pcap"))
    assert {row[1]: int(row[8]) for row in table} == {s["server"]: by_endpoint[s["server"]] for s in servers}
    shot = tmp_path / f"{name}.png"
    browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def findings_by_endpoint(path):
    """Findings of the frames to or from each endpoint, and of the analyses ending in such a frame."""
    ends, counts = {}, Counter()
    for r in records(path):
        if r.kind == "frame":
            pair = ends[r.number] = {endpoint(r.src, r.sport), endpoint(r.dst, r.dport)}
            found = len(list(r.all_findings()))
        else:
            pair, found = ends.get(r.frames[-1], set()) if r.frames else set(), len(r.findings)
        for end in pair:
            counts[end] += found
    return counts


def test_packet_strings_stay_text(browser, reports):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By
    open_page(browser, reports["hostile"])
    for number in (2, 4):
        click_row(browser, seq_of(browser, number))
        if number == 2:
            info = browser.execute_script("return document.querySelector('#list-rows .row.sel .c-info').textContent")
            assert info == f'CCREP_SERVER_INFO "{HOSTILE_HTML}" map=e1m1</textarea> players 3/8'
    tree = browser.find_element(By.ID, "tree").text
    assert f'Name: "{HOSTILE_CLIENT}"' in tree and f'Map: "{HOSTILE_MAP}"' in tree
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text
    assert browser.execute_script("return typeof window.pwned") == "undefined"
    assert browser.execute_script(
        "return document.querySelectorAll('img, textarea, b, [onload], [onerror], [onmouseover]').length") == 0
    names = browser.execute_script(
        "return [...document.querySelectorAll('#servers-table tbody tr')].map(tr => tr.cells[2].textContent)")
    assert sorted(names) == sorted([HOSTILE_HTML, safe(HOSTILE_NAME)])
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0  # no fetch
    refused = [e["message"] for e in browser.get_log("browser") if "Content Security Policy" in e["message"]]
    assert refused == []


def test_an_empty_report_opens(browser, reports):
    from selenium.webdriver.common.by import By
    open_page(browser, reports["empty"])
    assert browser.find_element(By.ID, "list-status").text == "0 of 0 rows"


def make_report(path, capture_path):
    """The report as the command writes it: ``dissect -q --html PATH CAPTURE``."""
    code, out, err = run_cli("-q", "--html", path, capture_path)
    assert (code, out, err) == (0, "", ""), err


def test_reassembled_message_has_its_own_bytes(browser, tmp_path):
    from selenium.webdriver.common.by import By
    path = capture("soldat-session.pcap")
    page = str(tmp_path / "soldat.html")
    make_report(page, path)
    record = frame_record(path, 14)
    line = next(m for m in record.messages if m.offset is None)
    ip = line["soldat.server.ip"]
    open_page(browser, page)
    click_row(browser, seq_of(browser, 14))
    titles = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#hex .hextitle")]
    assert titles == ["Frame 14 (130 bytes)",
                      f"Reassembled Soldat server from frames {','.join(map(str, line.frames))} ({line.length} bytes)"]
    browser.find_element(By.CSS_SELECTOR, '#tree .line[data-key="soldat.server.ip"]').click()
    assert highlighted(browser) == [[1, i] for i in range(ip.offset, ip.offset + ip.length)]


def test_the_recent_frames_table_forgets_its_oldest_past_its_limit():
    """The report's table of recent frames (MAX_RECENT of them) drops the oldest frame past its limit, one at a time,
    and a frame put again keeps its place."""
    from dissect.render import html
    table = html._Bounded(3)
    for number in range(1, 6):
        table.put(number, f"ends {number}")
    table.put(4, "again")
    table.put(6, "ends 6")
    table.put(7, "ends 7")
    assert [table.get(number) for number in range(1, 8)] == [None, None, None, None, "ends 5", "ends 6", "ends 7"]
    assert len(table.items) == 3


def test_a_large_frames_hex_pane_lays_out_its_first_bytes_and_the_rest_on_request(browser, tmp_path):
    """A frame's first HEX_SHOWN bytes are laid out when it is picked (two elements a byte: a 256 KiB frame took
    seconds); a button lays out the rest."""
    from selenium.webdriver.common.by import By
    import capkit
    source = tmp_path / "large.pcap"
    capkit.write_pcap(source, [(1700000000.0, capkit.ethernet(capkit.udp_packet("10.0.0.2", 40000, "10.0.0.1", 5000,
                                                                                  b"\xab" * 20000)))])
    page = str(tmp_path / "large.html")
    make_report(page, source)
    open_page(browser, page)
    click_row(browser, seq_of(browser, 1))
    count = "return document.querySelectorAll('#hex .b').length"
    assert browser.execute_script(count) == 4096
    more = browser.find_element(By.CSS_SELECTOR, "#hex .hexmore")
    assert more.text == "Show all 20042 bytes (15946 more)"
    more.click()
    assert browser.execute_script(count) == 20042
    assert browser.find_elements(By.CSS_SELECTOR, "#hex .hexmore") == []
