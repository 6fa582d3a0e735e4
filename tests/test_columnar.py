"""Parquet and Arrow output: the four tables, their schema from the field tables, row for row what
-T jsonl says of every bundled capture, row groups written as rows are made, bad values as nulls,
capture.to_arrow()/to_pandas(), and the README's query (servers with more than 10 players by map)."""

import glob
import json
import os
import re
import subprocess
import sys

import bench
import capkit
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import teeframe_peer as tf
from conftest import CAPTURES, ROOT, capture

import dissect
from dissect import columnar
from dissect.api import protocols
from dissect.capture.sources import open_capture
from dissect.columnar import TABLES, Column, Layout, TableSink, nanoseconds
from dissect.core.tables import FieldTable
from dissect.scale import run
from dissect.session import Session

BUNDLED = sorted(glob.glob(os.path.join(CAPTURES, "*.pcap*")))
BROWSER = ("10.3.0.100", 50000)
# (server address, map, players): three servers have more than 10 players, one of them answers twice.
SERVERS = [("10.3.0.1", "ctf5", 12), ("10.3.0.2", "ctf5", 16), ("10.3.0.3", "dm1", 11), ("10.3.0.4", "dm1", 4),
           ("10.3.0.5", "ctf5", 10), ("10.3.0.6", "dm2", 3), ("10.3.0.1", "ctf5", 13)]

# The README's queries (tests/test_columnar.py checks that the README holds them word for word).
README_SQL = """\
SELECT "teeframe.map" AS map, count(DISTINCT src || ':' || sport) AS servers,
       max("teeframe.num_players") AS most_players
FROM 'out/messages/*.parquet'
WHERE "teeframe.num_players" > 10
GROUP BY map ORDER BY servers DESC, map;"""
README_PYARROW = """\
import pyarrow.compute as pc
import pyarrow.dataset as ds

replies = ds.dataset("out/analysis").to_table(
    columns=["map", "server", "players"], filter=pc.field("players") > 10)
by_map = replies.group_by("map").aggregate([("server", "count_distinct"), ("players", "max")])
print(by_map.sort_by("map").to_pylist())"""


def eth_udp(src, sport, dst, dport, payload):
    return capkit.ethernet(capkit.udp_packet(src, sport, dst, dport, payload))


def servers_capture(path):
    """A browser asks seven TeeFrame servers for their info; the last reply claims 10**20 players."""
    frames = []
    for n, (address, map_name, players) in enumerate(SERVERS):
        frames.append(eth_udp(*BROWSER, address, 8303, tf.gie3(0x0100, n + 1)))
        clients = tf.sample_clients(players + 1, spectators=1)
        frames.append(eth_udp(address, 8303, *BROWSER, tf.iext(0x010000 | (n + 1), clients, map_name=map_name,
                                                                 name=f"server {n}", players=players,
                                                                 max_players=32)))
    frames.append(eth_udp(*BROWSER, "10.3.0.7", 8303, tf.gie3(0x0100, 9)))
    frames.append(eth_udp("10.3.0.7", 8303, *BROWSER, tf.iext(0x010009, [], players=10 ** 20)))
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + n * 0.001, frame) for n, frame in enumerate(frames)])


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    path = tmp_path_factory.mktemp("servers") / "servers.pcap"
    servers_capture(path)
    return str(path)


@pytest.fixture(scope="module")
def bundled_out(tmp_path_factory):
    out = tmp_path_factory.mktemp("parquet") / "out"
    assert run(BUNDLED, str(out)).code == 0
    return out


def table(out, name, part=None):
    data = pq.read_table(os.path.join(out, name, f"{part}.parquet") if part else os.path.join(out, name))
    if "time" in data.column_names:
        data = data.set_column(data.column_names.index("time"), "time", data.column("time").cast(pa.int64()))
    return data


# -- the schema ------------------------------------------------------------------------------------
def test_every_field_key_of_every_protocol_is_a_typed_message_column():
    layout = Layout()
    schema = layout.schemas["messages"]
    expected = {"uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(), "int16": pa.int16(),
                "int32": pa.int32(), "int": pa.int64(), "float": pa.float64(), "string": pa.string(),
                "address": pa.string(), "bool": pa.bool_(), "bytes": pa.binary()}
    count = 0
    for key, cls in protocols().items():
        repeated = columnar.repeated_keys(cls.fields)
        for spec in cls.fields:
            if spec.type in ("none", "protocol") or spec.key in (f"{key}.message", f"{key}.analysis"):
                assert spec.key not in schema.names
                continue
            field = schema.field(spec.key)
            value_type = field.type.value_type if spec.key in repeated else field.type
            assert value_type == expected[spec.type], spec.key
            assert field.metadata[b"description"] == spec.description.encode()
            count += 1
    assert len(schema.names) == count + len(columnar.message_head_columns()) + 1 and count > 150
    assert schema.names[-1] == "fields_json"


def test_records_of_a_group_are_list_columns_and_single_values_are_not():
    schema = Layout().schemas["messages"]
    assert schema.field("teeframe.client.name").type == pa.list_(pa.string())
    assert schema.field("teeframe.client.score").type == pa.list_(pa.int64())
    assert schema.field("odamex.player.frags").type == pa.list_(pa.int16())
    assert schema.field("odamex.ext.kills").type == pa.list_(pa.int16())
    assert schema.field("teeframe.num_players").type == pa.int64()
    assert schema.field("netquake.control.colors").type == pa.int32()      # a number with its halves beneath
    assert schema.field("netquake.control.colors.shirt").type == pa.uint8()


def test_a_plugins_table_becomes_columns_too():
    class Plugin:
        fields = FieldTable("zz", [("count", "Count", "uint16", "how many"), ("item", "Item", "none", "one item"),
                                   ("item.name", "Name", "string", "its name"), ("when", "When", "time", "a time")],
                            messages=True)

    schema = Layout({"zz": Plugin}).schemas["messages"]
    assert [name for name in schema.names if name.startswith("zz")] == ["zz.count", "zz.item.name", "zz.when"]
    assert schema.field("zz.item.name").type == pa.list_(pa.string())
    assert schema.field("zz.when").type == pa.timestamp("ns", tz="UTC")
    assert schema.metadata[b"protocols"] == b"zz"


def is_abuse_record(record):
    return record["protocol"] == "abuse" or record["name"] == "token_reuse"


def test_every_part_carries_the_schema_version(bundled_out):
    for name in TABLES:
        parts = sorted(os.listdir(os.path.join(bundled_out, name)))
        assert parts == [f"part-{n:05d}.parquet" for n in range(len(BUNDLED))] + ["part-run.parquet"]
        for part in parts:
            metadata = pq.read_schema(os.path.join(bundled_out, name, part)).metadata
            assert metadata[b"schema_version"] == b"1" and metadata[b"table"] == name.encode()


# -- row for row what -T jsonl says ----------------------------------------------------------------------
def jsonl_records(path):
    with dissect.open(path) as cap:  # to_dict() is what -T jsonl writes (tests/test_api.py)
        return [json.loads(json.dumps(record.to_dict(), default=str)) for record in cap]


def expected_tables(path, name, folded=False):
    """The rows of ``path``'s part as -T jsonl has them; ``folded``: one file of several, whose abuse records (run on
    the files folded) are not among its rows."""
    frames, messages, findings, analysis = [], [], [], []
    for record in jsonl_records(path):
        if folded and record["kind"] == "analysis" and is_abuse_record(record):
            continue
        if record["kind"] == "analysis":
            first = next((n for n in record["frames"] if n is not None), 0)
            for finding in record["findings"]:
                findings.append({"frame": first, "source": "analysis", "message_index": None,
                                 "analysis_index": len(analysis), "protocol": record["protocol"], **finding})
            analysis.append({"file": name, "analysis_index": len(analysis), "frame": first,
                             "frames": record["frames"], "protocol": record["protocol"], "name": record["name"],
                             "finding_count": len(record["findings"]), "result": record["result"]})
            continue
        every = record["findings"] + [f for m in record["messages"] for f in m["findings"]]
        frames.append({"file": name, "frame": record["frame"], "time": nanoseconds(record["time"]),
                       "caplen": record["caplen"], "length": record["length"], "src": record["src"],
                       "sport": record["sport"], "dst": record["dst"], "dport": record["dport"],
                       "transport": record["transport"], "protocol": record["protocol"], "info": record["info"],
                       "message_count": len(record["messages"]), "finding_count": len(every),
                       "worst_severity": max((f["severity"] for f in every), default=None,
                                             key=["chat", "note", "warning", "error"].index)})
        for finding in record["findings"]:
            findings.append({"frame": record["frame"], "source": "frame", "message_index": None,
                             "analysis_index": None, "protocol": record["protocol"], **finding})
        for index, msg in enumerate(record["messages"]):
            messages.append({"file": name, "frame": record["frame"], "message_index": index, "frames": msg["frames"],
                             "src": record["src"], "sport": record["sport"], "dst": record["dst"],
                             "dport": record["dport"], "protocol": msg["protocol"], "message": msg["message"],
                             "offset": msg["offset"], "length": msg["length"],
                             "finding_count": len(msg["findings"]), "fields": msg["fields"]})
            for finding in msg["findings"]:
                findings.append({"frame": record["frame"], "source": "message", "message_index": index,
                                 "analysis_index": None, "protocol": msg["protocol"], **finding})
    return frames, messages, findings, analysis


def tree_values(fields, found=None):
    found = {} if found is None else found
    for field in fields:
        found.setdefault(field["key"], []).append(field["value"])
        tree_values(field["children"], found)
    return found


def as_json_value(value):
    return value.hex() if isinstance(value, bytes) else value


@pytest.mark.parametrize("index", range(len(BUNDLED)), ids=[os.path.basename(p) for p in BUNDLED])
def test_the_tables_say_what_jsonl_says_row_for_row(bundled_out, index):
    path = name = BUNDLED[index]
    frames, messages, findings, analysis = expected_tables(path, name, folded=True)
    part = f"part-{index:05d}"
    assert table(bundled_out, "frames", part).to_pylist() == frames
    got = table(bundled_out, "findings", part).to_pylist()
    assert [{k: v for k, v in row.items() if k != "file"} for row in got] == findings
    assert {row["file"] for row in got} <= {name}
    rows = table(bundled_out, "analysis", part).to_pylist()
    assert len(rows) == len(analysis)
    for row, want in zip(rows, analysis):
        assert json.loads(row["result_json"]) == want.pop("result")
        assert {k: row[k] for k in want} == want
    columns = {column.key: column for column in Layout().columns["messages"] if hasattr(column, "key")}
    rows = table(bundled_out, "messages", part).to_pylist()
    assert len(rows) == len(messages) > 0
    for row, msg in zip(rows, messages):
        fields = msg.pop("fields")
        assert {k: row[k] for k in msg} == msg
        assert json.loads(row["fields_json"]) == fields
        found = tree_values(fields)
        for key, column in columns.items():
            values = found.get(key) if key.split(".")[0] == msg["protocol"] else None
            if values is None:
                assert row[key] is None, key
            elif column.repeated:
                assert len(row[key]) == len(values), key
                for got, want in zip(row[key], values):
                    assert_fits(column.type.value_type, got, want, key)
            else:
                assert_fits(column.type, row[key], values[0], key)


def assert_fits(arrow_type, got, want, key):
    """The column holds the tree's value, or null where that value does not fit the column's type."""
    if got is None and want is not None:
        assert Column(key, arrow_type).array([want]).to_pylist() == [None], (key, want)
    else:
        assert as_json_value(got) == want, key


def test_a_reply_read_from_its_columns(servers, tmp_path):
    out = tmp_path / "out"
    assert run([servers], str(out)).code == 0
    rows = table(out, "messages").to_pylist()
    reply = rows[1]
    assert (reply["frame"], reply["message_index"], reply["frames"], reply["src"], reply["sport"]) == \
        (2, 0, [2], "10.3.0.1", 8303)
    assert (reply["protocol"], reply["message"], reply["offset"]) == ("teeframe", "iext", 42)
    assert (reply["teeframe.map"], reply["teeframe.num_players"], reply["teeframe.max_players"]) == ("ctf5", 12, 32)
    assert reply["teeframe.client.name"][:3] == ["nameless tee", "Tëe Brawler", "忍者の影忍"]
    assert reply["teeframe.client.is_player"] == [client[4] for client in tf.sample_clients(13, spectators=1)]
    assert reply["teeframe.client.score"][1] == -9999
    assert reply["teeframe.request_in"] == 1 and reply["teeframe.response_time"] == pytest.approx(0.001, abs=1e-6)
    assert reply["netquake.control.host_name"] is None and reply["odamex.player.name"] is None
    request = rows[0]
    assert request["teeframe.token"] == 1 and request["teeframe.client.name"] is None


def test_a_value_beyond_its_column_is_null_and_stays_in_the_json(servers, tmp_path):
    out = tmp_path / "out"
    assert run([servers], str(out)).code == 0
    last = table(out, "messages").to_pylist()[-1]
    assert last["teeframe.num_players"] is None
    tree = {field["key"]: field["value"] for field in json.loads(last["fields_json"])}
    assert tree["teeframe.num_players"] == "100000000000000000000"  # -T json writes it as its decimal string


def test_analysis_rows_carry_the_common_results(servers, tmp_path):
    out = tmp_path / "out"
    assert run([servers], str(out)).code == 0
    rows = table(out, "analysis").to_pylist()
    assert [(r["frame"], r["frames"], r["server"], r["client"], r["map"], r["players"], r["max_players"])
            for r in rows[:2]] == [(2, [2], "10.3.0.1:8303", "10.3.0.100:50000", "ctf5", 12, 32),
                                   (4, [4], "10.3.0.2:8303", "10.3.0.100:50000", "ctf5", 16, 32)]
    assert rows[0]["server_name"] == "server 0" and rows[0]["response_time"] == pytest.approx(0.001, abs=1e-6)
    assert (rows[0]["protocol"], rows[0]["name"], rows[0]["analysis_index"]) == ("teeframe", "server_info", 0)


def test_soldat_list_rows_carry_their_response_time():
    # README: the analysis table's response_time is filled "where the record measured one"; a Soldat
    # list measures its own (result "time", from the request to h), which --stats counts as its response time.
    with dissect.open(os.path.join(CAPTURES, "soldat-session.pcap")) as cap:
        rows = cap.to_arrow()["analysis"].to_pylist()
    lists = [r for r in rows if (r["protocol"], r["name"]) == ("soldat", "server_list")]
    assert len(lists) == 2
    for row in lists:
        assert row["response_time"] is not None
        assert row["response_time"] == json.loads(row["result_json"])["time"]


def test_bad_values_become_nulls_never_errors():
    assert Column("x", pa.uint8()).array([1, 300, -1, "7", 2.0, True, None]).to_pylist() == \
        [1, None, None, None, 2, 1, None]
    assert Column("x", pa.string()).array(["ok", "bad \udcff", b"\x01\x02", 5]).to_pylist() == \
        ["ok", "bad \\udcff", "0102", "5"]
    assert Column("x", pa.list_(pa.int16())).array([[1, 70000, None], None, "x"]).to_pylist() == \
        [[1, None, None], None, None]
    assert Column("x", pa.binary()).array([b"a", "é", 3]).to_pylist() == [b"a", "é".encode(), None]
    assert Column("x", pa.bool_()).array([True, 0, 7, "yes"]).to_pylist() == [True, False, None, None]
    assert Column("x", pa.int64()).array([2.0, 2.5]).to_pylist() == [2, None]
    assert Column("x", pa.string()).array([b"\xff", "a"]).to_pylist() == ["ff", "a"]
    assert Column("x", pa.float64()).array([1, 2.5, 10 ** 400, "x"]).to_pylist() == [1.0, 2.5, None, None]
    assert nanoseconds(1700000000.01) == 1700000000010000000
    assert [nanoseconds(v) for v in (float("nan"), float("inf"), 1e20, "1", None)] == [None] * 5


def test_a_display_filter_chooses_the_rows(tmp_path):
    out = tmp_path / "out"
    paths = [capture("teeframe-session.pcap"), capture("netquake-session.pcap")]
    assert run(paths, str(out), display_filter="teeframe.num_players > 10").code == 0
    frames = table(out, "frames").to_pylist()
    assert [(os.path.basename(r["file"]), r["frame"]) for r in frames] == [("teeframe-session.pcap", 2)]
    assert table(out, "messages").column("teeframe.num_players").to_pylist() == [61]


# -- memory: row groups as rows are made --------------------------------------------------------
def test_rows_go_out_a_row_group_at_a_time_while_the_capture_is_read(tmp_path, monkeypatch):
    path = tmp_path / "traffic.pcap"
    bench.write_mixed(str(path), 2500)
    monkeypatch.setattr(columnar, "ROWS", dict.fromkeys(TABLES, 1000))
    monkeypatch.setattr(columnar, "TEXT_BYTES", 40000)
    emitted, reading = [], [0]
    layout = Layout()
    sink = TableSink(lambda name, batch: emitted.append((name, batch, reading[0])), layout, "traffic.pcap")
    session = Session(sink, tree=True)
    for frame in open_capture(str(path)):
        reading[0] = frame.number
        session.frame(frame)
    session.finish()
    sink.close()
    assert [(batch.num_rows, at) for name, batch, at in emitted if name == "frames"] == \
        [(1000, 1000), (1000, 2000), (500, 2500)]
    messages = [(batch, at) for name, batch, at in emitted if name == "messages"]
    assert len(messages) > 3 and messages[0][1] < 1000
    for batch, _ in messages:
        text = [len(t) for t in batch.column("fields_json").to_pylist()]
        assert sum(text[:-1]) < 40000 <= sum(text) or batch is messages[-1][0]


def test_a_part_holds_one_row_group_per_batch(tmp_path, monkeypatch):
    path = tmp_path / "traffic.pcap"
    bench.write_mixed(str(path), 2500)
    monkeypatch.setitem(columnar.ROWS, "frames", 1000)
    assert run([str(path)], str(tmp_path / "out")).code == 0
    part = pq.ParquetFile(tmp_path / "out" / "frames" / "part-00000.parquet")
    assert [part.metadata.row_group(i).num_rows for i in range(part.num_row_groups)] == [1000, 1000, 500]


# -- the API -------------------------------------------------------------------------------------
def test_to_arrow_gives_the_tables_to_parquet_writes(bundled_out):
    index = BUNDLED.index(capture("teeframe-session.pcap"))
    with dissect.open(BUNDLED[index]) as cap:
        tables = cap.to_arrow()
    assert sorted(tables) == sorted(TABLES)
    for name in TABLES:
        assert tables[name].equals(pq.read_table(os.path.join(bundled_out, name, f"part-{index:05d}.parquet")))
    assert tables["frames"].num_rows == 11 and tables["analysis"].num_rows == 3


def test_to_arrow_names_each_file_of_a_capture_read_as_one():
    paths = [capture("teeframe-session.pcap"), capture("soldat-session.pcap")]
    with dissect.open(paths) as cap:
        frames = cap.to_arrow()["frames"]
    files = frames.column("file").to_pylist()
    assert files == [paths[0]] * 11 + [paths[1]] * (frames.num_rows - 11)
    assert frames.column("frame").to_pylist() == list(range(1, frames.num_rows + 1))  # numbers go on


def test_to_arrow_names_the_file_of_an_analysis_record_concluded_in_the_next():
    """A TeeFrame response left incomplete in the first file is concluded while the second is read (or at the end):
    its row names the file its frames came from, not the one being read."""
    paths = [capture("teeframe-damaged.pcap"), capture("netquake-session.pcap")]
    with dissect.open(paths) as cap:
        frames = sum(1 for rec in dissect.open(paths[0]) if rec.kind == "frame")
        analysis = cap.to_arrow()["analysis"].to_pylist()
    assert analysis and {row["protocol"] for row in analysis} == {"teeframe", "netquake"}
    for row in analysis:
        assert row["file"] == paths[0 if row["frame"] <= frames else 1], row
    late = [row for row in analysis if row["protocol"] == "teeframe" and row["frame"] in (6, 22)]
    assert len(late) == 2


def test_to_pandas_gives_data_frames():
    pytest.importorskip("pandas")
    with dissect.open(capture("teeframe-session.pcap")) as cap:
        frames = cap.to_pandas()
    messages = frames["messages"]
    assert list(messages.loc[messages["teeframe.num_players"] > 10, "teeframe.map"]) == ["dm1_remake_2026"]
    assert str(frames["frames"]["time"].dtype) == "datetime64[ns, UTC]"


def test_without_pyarrow_one_line_names_the_extra():
    code = ("import sys\nsys.modules['pyarrow'] = sys.modules['pyarrow.parquet'] = None\n"
            "import dissect\nfrom dissect.scale import run_to_parquet\n"
            "for call in (lambda: run_to_parquet(['captures/teeframe-session.pcap'], 'out'),\n"
            "             lambda: dissect.open('captures/teeframe-session.pcap').to_arrow()):\n"
            "    try:\n        call()\n"
            "    except ImportError as exc:\n        print(type(exc).__name__, exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.stdout.splitlines() == [
        "MissingExtra --to-parquet needs pyarrow: pip install 'dissect-gameq[scale]'",
        "MissingExtra to_arrow() needs pyarrow: pip install 'dissect-gameq[scale]'"]
    assert not os.path.exists(os.path.join(ROOT, "out"))


# -- the README's query --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def query_dir(servers, tmp_path_factory):
    """DIR written from the generated servers and the bundled TeeFrame session, as the README's example."""
    folder = tmp_path_factory.mktemp("query")
    assert run([servers, capture("teeframe-session.pcap")], str(folder / "out")).code == 0
    return folder


def test_servers_with_more_than_10_players_by_map_in_pyarrow(query_dir, capsys, monkeypatch):
    monkeypatch.chdir(query_dir)
    exec(compile(README_PYARROW, "README.md", "exec"), {})
    assert capsys.readouterr().out.strip() == str([
        {"map": "ctf5", "server_count_distinct": 2, "players_max": 16},
        {"map": "dm1", "server_count_distinct": 1, "players_max": 11},
        {"map": "dm1_remake_2026", "server_count_distinct": 1, "players_max": 61}])


def test_servers_with_more_than_10_players_by_map_in_sql(query_dir, monkeypatch):
    duckdb = pytest.importorskip("duckdb")
    monkeypatch.chdir(query_dir)
    assert duckdb.sql(README_SQL).fetchall() == [("ctf5", 2, 16), ("dm1", 1, 11), ("dm1_remake_2026", 1, 61)]


def test_the_readme_holds_the_tested_queries():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    if "--to-parquet" not in text:
        pytest.skip("the README's Parquet section is not in README.md yet")
    blocks = re.findall(r"```(?:sql|python)\n(.*?)```", text, re.S)
    assert README_SQL + "\n" in blocks and README_PYARROW + "\n" in blocks
