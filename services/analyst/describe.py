# The data agent's offline analysis (services/analyst/role.ts sends it when no model writes one).
# Python standard library only. The workflow defines DATA_TEXT (the data as given: CSV with a
# header row, or a JSON array of objects) before this code; role.ts puts CHART before it. It prints
# a report per column and, when CHART is set, as its last line the chart's rows as JSON: the first
# number column summed per value of the first text column, the 50 largest sums (fewer when their
# JSON would pass CHART_BUDGET characters). The whole output
# stays within OUTPUT_BUDGET characters (column lines are left out to fit) so that an output cap of
# 4000 characters never cuts the chart rows.
import csv
import io
import json
import math
import re
import statistics
from collections import Counter

NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
MAX_CATEGORIES = 50
TOP_VALUES = 3
LABEL_CHARS = 40
OUTPUT_BUDGET = 3600
CHART_BUDGET = 2400


def records_of(text):
    """The records and the column names in order of first appearance."""
    if text[:1] in "[{":
        value = json.loads(text)
        if not isinstance(value, list):
            raise ValueError("the JSON data is not an array of objects")
        records = [r for r in value if isinstance(r, dict)]
        columns = list(dict.fromkeys(k for r in records for k in r))
        return columns, records
    reader = csv.DictReader(io.StringIO(text))
    records = list(reader)
    return list(dict.fromkeys(reader.fieldnames or [])), records


def kind_of(v):
    """missing (None, blank text), number (a finite number, number-like text) or text."""
    if v is None or (isinstance(v, str) and v.strip() == ""):
        return "missing"
    if isinstance(v, str):
        return "number" if NUMBER.fullmatch(v.strip()) else "text"
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return "number"
    return "text"


def fmt(x):
    """A number for the report: an integer as such, otherwise at most 4 decimals."""
    x = round(x, 4)
    return str(int(x)) if x == int(x) else repr(x)


def plain(x):
    """A sum for the chart: an integer as such, otherwise at most 6 decimals."""
    x = round(x, 6)
    return int(x) if x == int(x) else x


def count(n, word):
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def label(v):
    """A value as a short label: text as it is, anything else as JSON, at most LABEL_CHARS."""
    text = (v if isinstance(v, str) else json.dumps(v)).strip()
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def fit(lines, reserved):
    """The report lines, column lines dropped from the end (and said so) until they and `reserved` characters fit the budget."""
    if len("\n".join(lines)) + reserved <= OUTPUT_BUDGET:
        return list(lines)
    room = OUTPUT_BUDGET - reserved - 60  # the line that says how many were left out
    kept = list(lines)
    while len("\n".join(kept)) > room and len(kept) > 2:
        kept.pop()
    return kept + [f"- … {count(len(lines) - len(kept), 'more column')} not shown (output limit)"]


def describe(name, values):
    kinds = [kind_of(v) for v in values]
    present = [v for v, k in zip(values, kinds) if k != "missing"]
    missing = len(values) - len(present)
    if not present:
        return "empty", f"- {label(name)}: no values ({missing} missing)"
    if "text" not in kinds:
        nums = [float(v) for v in present]
        stats = f"min {fmt(min(nums))}, mean {fmt(statistics.fmean(nums))}, median {fmt(statistics.median(nums))}, max {fmt(max(nums))}"
        return "number", f"- {label(name)} (number): {count(len(present), 'value')}, {missing} missing; {stats}"
    counts = Counter(label(v) for v in present)
    top = ", ".join(f"{v} ({n})" for v, n in counts.most_common(TOP_VALUES))
    return "text", f"- {label(name)} (text): {count(len(present), 'value')}, {missing} missing, {len(counts)} distinct; top: {top}"


def chart_rows(records, category, measure):
    sums = {}
    for r in records:
        c, v = r.get(category), r.get(measure)
        if kind_of(c) == "missing" or kind_of(v) != "number":
            continue
        key = label(c)
        sums[key] = sums.get(key, 0.0) + float(v)
    largest = sorted(sums.items(), key=lambda kv: -kv[1])[:MAX_CATEGORIES]
    rows = [{"category": c, "value": plain(s)} for c, s in largest]
    while len(as_json(rows)) > CHART_BUDGET:
        rows.pop()
    return rows, len(sums)


def as_json(rows):
    return json.dumps(rows, ensure_ascii=False, separators=(",", ":"))


def main():
    try:
        text = DATA_TEXT.strip()
    except NameError:
        text = ""
    if not text:
        print("No data was given: there is nothing to analyse.")
        if CHART:
            print("[]")
        return
    columns, records = records_of(text)
    names = ", ".join(columns)
    lines = [f"Rows: {len(records)}", f"Columns: {len(columns)} ({names if len(names) <= 300 else names[:299] + '…'})"]
    kinds = {}
    for name in columns:
        kinds[name], line = describe(name, [r.get(name) for r in records])
        lines.append(line)
    if not CHART:
        print("\n".join(fit(lines, 0)))
        return
    category = next((c for c in columns if kinds[c] == "text"), None)
    measure = next((c for c in columns if kinds[c] == "number"), None)
    if category is None or measure is None:
        tail = ["Chart: none (the data needs a text column and a number column)", "[]"]
    else:
        rows, distinct = chart_rows(records, category, measure)
        shown = f"the {len(rows)} largest of {distinct}" if distinct > len(rows) else f"{len(rows)}"
        tail = [f"Chart: sum of {label(measure)} by {label(category)} ({shown} categories)", as_json(rows)]
    print("\n".join(fit(lines, len("\n".join(tail)) + 1) + tail))


main()
