"""Exports of a report for people to look at: a Chrome/Perfetto trace and one HTML file.

    with ttreport.open("generated/ttreport/reports/demo") as r:
        r.export_chrome_trace("demo.json")     # trace.py: ui.perfetto.dev, chrome://tracing
        r.export_html("demo.html")             # html.py: opens offline in any browser

Each format has one module and one entry point; `Report.export_*` and the `ttreport trace` / `html`
commands are thin wrappers. memory.py is the L1/DRAM-over-time walk both share.
"""
