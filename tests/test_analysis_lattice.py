"""The lattice: type promotion (facts §2.1), joins, dtype names."""
from dtypelint.analysis.lattice import SCALAR, UNKNOWN, Step, Val, dtype_name, join, promote, tensor, widest


def kind(vals):
    res, _ = promote(vals)
    return None if res is None else (res.kind, res.zdim)


def test_dim_tensors_promote_to_widest():
    assert kind([tensor("low"), tensor("fp32")]) == ("fp32", False)
    assert kind([tensor("low"), tensor("fp64")]) == ("fp64", False)
    assert kind([tensor("low"), tensor("olp")]) == ("fp32", False)  # bf16 + fp16 -> fp32
    assert widest("low", "olp") == "fp32"


def test_scalars_and_zero_dim_tensors_never_promote():
    assert kind([tensor("low"), SCALAR]) == ("low", False)
    assert kind([tensor("low"), tensor("fp32", zdim=True)]) == ("low", False)
    assert kind([tensor("low"), tensor("fp64", zdim=True)]) == ("low", False)


def test_integer_tensor_with_float_operands():
    assert kind([tensor("int"), tensor("low")]) == ("low", False)
    assert kind([tensor("int"), Val("scalar", scalar_float=True)]) == ("fp32", False)
    assert kind([tensor("int"), Val("scalar")]) == ("int", False)
    assert kind([tensor("int"), tensor("low", zdim=True)]) == ("low", False)


def test_unknown_operand_makes_result_unknown():
    assert kind([tensor("low"), UNKNOWN]) is None
    assert kind([tensor("fp32"), UNKNOWN]) is None


def test_promotion_keeps_the_winner_provenance():
    step = Step("f.py", 3, 5, "`self.w` is float32")
    res, winner = promote([tensor("low"), tensor("fp32", (step,))])
    assert res.kind == "fp32" and res.prov == (step,)


def test_join_is_a_may_analysis_for_floats():
    a = tensor("low")
    b = tensor("fp32", (Step("f.py", 1, 1, "x"),))
    assert join(a, b).kind == "fp32"
    assert join(b, a).kind == "fp32"
    assert join(a, tensor("low")).kind == "low"


def test_join_with_unknown_or_none():
    assert join(tensor("fp32"), UNKNOWN).kind == "unknown"
    assert join(tensor("low"), Val("none")).kind == "low"
    assert join(Val("pybool", const=True), Val("pybool", const=False)).const is None


def test_dtype_names_follow_compute_dtype():
    assert dtype_name("low", "bfloat16") == "bfloat16"
    assert dtype_name("olp", "bfloat16") == "float16"
    assert dtype_name("fp32", "float16") == "float32"
