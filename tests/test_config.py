"""ttreport.Config: keyword-only, validated, and overridable by the TTREPORT_CONFIG environment variable."""

import dataclasses
import json

import pytest

import ttreport
from ttreport import Config, ConfigError


def test_defaults_are_cheap_and_documented_values():
    c = Config()
    assert (c.tensors, c.detach_saved_tensors, c.stack_traces, c.buffers, c.buffer_pages, c.comparison) == \
        ("none", True, True, True, False, "off")
    assert str(c.root) == "generated/ttreport/reports"


def test_fields_are_keyword_only():
    with pytest.raises(TypeError):
        Config("outputs")


@pytest.mark.parametrize("field, value, allowed", [
    ("tensors", "some", "'none' | 'outputs' | 'all'"),
    ("comparison", "on", "'off' | 'local' | 'global' | 'both'"),
    ("stack_depth", 0, "an integer >= 1"),
    ("max_tensor_bytes", -1, "an integer >= 0"),
    ("flush_ops", 1.5, "an integer >= 1"),
    ("flush_interval_s", 0, "a number of seconds from 0.001 to 3600"),
    ("comparison_pcc", 1.5, "a number between 0 and 1"),
    ("comparison_atol", -1e-3, "null or a finite number >= 0"),
    ("stack_traces", "yes", "true or false"),
])
def test_a_bad_value_names_the_field_the_value_and_what_is_allowed(field, value, allowed):
    with pytest.raises(ConfigError) as e:
        Config(**{field: value})
    assert str(e.value) == f"Config {field}={value!r} is not allowed; use {allowed}"


def test_env_json_overrides_the_given_config():
    base = Config(tensors="outputs", stack_depth=3)
    env = {"TTREPORT_CONFIG": json.dumps({"tensors": "all", "buffer_pages": True})}
    c = Config.from_env(base, environ=env)
    assert (c.tensors, c.buffer_pages, c.stack_depth) == ("all", True, 3)
    assert Config.from_env(base, environ={}) is base


def test_env_unknown_key_is_an_error_listing_the_keys():
    with pytest.raises(ConfigError, match=r"unknown key 'tensor'; the keys are: root, tensors, "):
        Config.from_env(environ={"TTREPORT_CONFIG": '{"tensor": "all"}'})


def test_env_bad_value_is_an_error_not_a_warning():
    with pytest.raises(ConfigError, match=r"Config tensors='everything' is not allowed; use 'none' \| 'outputs'"):
        Config.from_env(environ={"TTREPORT_CONFIG": '{"tensors": "everything"}'})


@pytest.mark.parametrize("text", ["tensors=all", '["tensors"]'])
def test_env_must_be_a_json_object(text):
    with pytest.raises(ConfigError, match="TTREPORT_CONFIG"):
        Config.from_env(environ={"TTREPORT_CONFIG": text})


def test_capture_applies_the_environment_and_saves_the_config_it_used(tmp_path, monkeypatch):
    monkeypatch.setenv("TTREPORT_CONFIG", '{"stack_depth": 2, "tensors": "outputs"}')
    with ttreport.capture(tmp_path / "r", config=Config(buffers=False)) as report:
        pass
    saved = json.loads((report.path / "config.json").read_text())["config"]
    assert (saved["stack_depth"], saved["tensors"], saved["buffers"]) == (2, "outputs", False)
    assert report.config == Config(root=Config().root, stack_depth=2, tensors="outputs", buffers=False)
    monkeypatch.setenv("TTREPORT_CONFIG", '{"nope": 1}')
    with pytest.raises(ConfigError, match="nope"):
        ttreport.capture(tmp_path / "r2").start()
    assert not (tmp_path / "r2").exists()


# Every value TTREPORT_CONFIG can carry that is wrong: one line naming the variable, the key and the fix.
@pytest.mark.parametrize("text, key, allowed", [
    ('{"root": 5}', "root", "a folder path"),
    ('{"root": null}', "root", "a folder path"),
    ('{"root": ["a"]}', "root", "a folder path"),
    ('{"flush_interval_s": NaN}', "flush_interval_s", "from 0.001 to 3600"),
    ('{"flush_interval_s": Infinity}', "flush_interval_s", "from 0.001 to 3600"),
    ('{"flush_interval_s": -1}', "flush_interval_s", "from 0.001 to 3600"),
    ('{"flush_interval_s": 1e-9}', "flush_interval_s", "from 0.001 to 3600"),
    ('{"flush_interval_s": true}', "flush_interval_s", "from 0.001 to 3600"),
    ('{"comparison_rtol": NaN}', "comparison_rtol", "finite number"),
    ('{"comparison_atol": Infinity}', "comparison_atol", "finite number"),
    ('{"comparison_pcc": NaN}', "comparison_pcc", "between 0 and 1"),
    ('{"flush_ops": 1.5}', "flush_ops", "an integer >= 1"),
    ('{"writer": "thread"}', "writer", "retired (issue 32)"),
    ('{"max_tensor_bytes": 1e9}', "max_tensor_bytes", "an integer >= 0"),
    ('{"stack_depth": -3}', "stack_depth", "an integer >= 1"),
    ('{"gc_freeze": 1}', "gc_freeze", "true or false"),
    ('{"tensors": ["all"]}', "tensors", "'none' | 'outputs' | 'all'"),
    ('{"comparison": {}}', "comparison", "'off' | 'local'"),
])
def test_every_bad_environment_value_is_one_line_naming_the_key(text, key, allowed):
    with pytest.raises(ConfigError) as e:
        Config.from_env(environ={"TTREPORT_CONFIG": text})
    message = str(e.value)
    assert message.startswith(f"TTREPORT_CONFIG: Config {key}=") and allowed in message and "\n" not in message


def test_a_root_that_is_not_writable_is_one_line_when_the_capture_starts(monkeypatch):
    monkeypatch.setenv("TTREPORT_CONFIG", '{"root": "/proc"}')
    with pytest.raises(ttreport.ReportPathError) as e:
        ttreport.capture("run-1").start()
    assert "/proc/run-1" in str(e.value) and "Config(root=" in str(e.value) and "\n" not in str(e.value)


def test_help_shows_every_option_with_its_default_and_cost():
    import pydoc

    text = " ".join(" ".join(line.strip(" |") for line in pydoc.render_doc(Config, renderer=pydoc.plaintext)
                             .splitlines()).split())  # one line: a phrase may wrap
    for f in dataclasses.fields(Config):
        assert f"{f.name}:" in text or f"{f.name}," in text, f"help(ttreport.Config) does not document {f.name}"
    for cost in ("1-3 us per op", "doubles the CPU", "10-20 us per op", "disk", "large and slow"):
        assert cost in text
