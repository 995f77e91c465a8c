"""The capture side: what runs while a model runs. Its entry point, `ttreport.capture` / `ttreport.profile` /
`ttreport.Capture`, is session.py's.

    import ttreport
    with ttreport.capture("my-run") as run:   # ttreport.capturing.session.capture
        model(x)

session.py opens the report and closes it in every case; recorder.py is the hook on the model's thread;
records.py declares the records it hands on; oplog.py, writer.py, log_writer.py and writer_process.py turn them
into rows; golden.py, log_perf.py and device_graph.py add the golden checks, device time estimates and captured
graphs; rank.py writes a multi-host run's rank into the rows at close.

This package's own module imports nothing: the writer process and the readers that import one of its modules for
a constant (records.py, standard library only) do not import the session, and so neither torch nor device_sim.
`ttreport.capture` is the function (ttreport/__init__.py keeps the subpackage from taking the name): import a module
of this package as `from ttreport.capturing import recorder`, and patch it in a test as
`monkeypatch.setattr(recorder, "NAME", value)`.
"""
