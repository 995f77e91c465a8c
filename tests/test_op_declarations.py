"""An op is declared once, at register_op: its name, kind and traits; the body takes its name from there."""

import inspect

import pytest
import torch

import device_sim as ttnn
from device_sim import perf_model, registry
from device_sim.ops.common import check_tt_nn_only, output, values
from device_sim.registry import OWN_NAME, Trait


@pytest.fixture
def registered():
    """register_op for one test: every op it registered is removed afterwards."""
    names = []

    def register(name, **declared):
        names.append(name)
        return ttnn.register_op(name, **declared)

    yield register
    for name in names:
        ttnn.OPS.pop(name, None)


def test_the_registry_hands_a_body_its_name_and_callers_do_not_see_the_parameter(registered, device):
    def double(x, *, op_name: str = OWN_NAME, **tt_nn_only):
        if tt_nn_only:
            check_tt_nn_only(op_name, tt_nn_only)
        return output(values(x, op_name) * 2, x, [x], op_name=op_name)

    op = registered("test.double", golden=lambda x, **_: x * 2)(double)
    assert "op_name" not in inspect.signature(op).parameters
    x = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=device)
    assert torch.equal(ttnn.to_torch(op(x)), torch.full((32, 32), 2.0))
    with pytest.raises(TypeError, match=r"^test\.double\(\) got an unexpected keyword argument 'bogus'; it takes x$"):
        op(x, bogus=1)


def test_a_body_whose_op_name_default_is_not_own_name_is_refused(registered):
    def body(x, *, op_name="ttnn.other"):
        return x

    with pytest.raises(ValueError, match="op_name= default must be registry.OWN_NAME"):
        registered("test.misnamed")(body)


@pytest.mark.parametrize("declared, message", [
    (dict(kind="fast"), "kind='fast' is not one of"),
    (dict(traits={"view"}), "traits must be Trait members"),
    (dict(collective="broadcast"), "collective='broadcast' is not one of"),
    (dict(golden=lambda x: x, no_golden="why"), "give golden= or no_golden=, not both"),
])
def test_a_bad_declaration_names_the_bad_value(declared, message):
    with pytest.raises(ValueError, match=message):
        ttnn.register_op("test.bad", **declared)
    assert "test.bad" not in ttnn.OPS


def test_the_perf_model_prices_each_op_by_its_declared_kind():
    for op in ttnn.registered_ops():
        for short in op.short_names:
            assert perf_model._family(short) == op.kind, op.name
            assert registry.named(short).collective == op.collective, op.name
            assert (short in perf_model._FREE) == (op.kind == "free"), op.name


def test_the_perf_model_declares_kinds_only_for_ops_device_sim_does_not_register():
    # a registered op's kind is its declaration's; a second one here would be dead (and could disagree)
    assert not [name for name in perf_model._UNREGISTERED_KINDS if registry.named(name) is not None]


def test_an_op_registered_after_the_perf_model_was_imported_is_priced_by_its_kind(registered):
    # perf_model is imported with this file: it reads each op's kind as it prices it, never a list made at its import
    registered("test.late_matmul", kind="matmul")(lambda a, b: a)
    registered("test.late_view", kind="free")(lambda a: a)
    assert perf_model._family("late_matmul") == "matmul" and "late_matmul" in perf_model.NEEDS_CALL
    assert "late_view" in perf_model._FREE and perf_model.estimate_op(ttnn.OPS["test.late_view"], (), {}, None) is None
    ttnn.OPS.pop("test.late_matmul")
    assert perf_model._family("late_matmul") == "unary" and "late_matmul" not in perf_model.NEEDS_CALL


def test_one_short_name_declared_with_two_kinds_is_refused_at_registration(registered):
    # a report names ops by short name (ttnn.typecast and ttnn.experimental.typecast are both "typecast")
    assert ttnn.OPS["ttnn.typecast"].kind == ttnn.OPS["ttnn.experimental.typecast"].kind
    with pytest.raises(ValueError, match="ttnn.add, also 'add' in a report, is kind='binary'"):
        registered("test.add", kind="matmul")(lambda a, b: a)
    assert "test.add" not in ttnn.OPS and perf_model._family("add") == "binary"


def test_traits_and_aliases_read_from_the_registry():
    assert Trait.VIEW in ttnn.OPS["ttnn.view"].traits and Trait.HOST in ttnn.OPS["ttnn.from_torch"].traits
    assert ttnn.OPS["ttnn.mul"].aliases == ("ttnn.multiply",) and ttnn.multiply is ttnn.mul
    assert ttnn.OPS["ttnn.matmul"].output_keyword == "optional_output_tensor"
    assert registry.OPS["ttnn.all_gather"].no_golden and registry.OPS["ttnn.all_gather"].golden_function is None
