"""Per-block plans and the llama.cpp-named tensors each plan produces.

Tensor names and layouts follow llama.cpp's gguf-py/gguf/constants.py (MODEL_TENSOR names:
token_embd, output, output_norm, blk.N.attn_q, ffn_gate_exps, ...). Shapes list the row
length (ggml's ne[0]) last; stacked expert tensors are (n_expert, rows, row_len).
"""

from __future__ import annotations

from dataclasses import dataclass

from estimator.model.spec import LayerSpec, MLASpec, Tensor

F32_BYTES = 4


@dataclass(frozen=True)
class LinearAttn:
    """Gated DeltaNet (Qwen3-Next linear attention) dimensions."""

    n_key_heads: int
    n_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int

    @property
    def key_dim(self) -> int:
        return self.n_key_heads * self.key_head_dim

    @property
    def value_dim(self) -> int:
        return self.n_value_heads * self.value_head_dim

    @property
    def conv_dim(self) -> int:
        """Channels of the causal conv: q, k and v concatenated."""
        return 2 * self.key_dim + self.value_dim

    @property
    def state_bytes_per_seq(self) -> int:
        """Fixed state per sequence, f32 as llama.cpp keeps it.

        conv state (kernel - 1) x conv_dim plus recurrent state n_value_heads x key_head_dim
        x value_head_dim, times 4 bytes. For Qwen3-Next-80B: (3 x 8192 + 32 x 128 x 128)
        x 4 = 2,195,456 bytes per linear layer. vLLM keeps the same elements in the model
        dtype by default (half of this).
        """
        conv = (self.conv_kernel - 1) * self.conv_dim
        recurrent = self.n_value_heads * self.key_head_dim * self.value_head_dim
        return (conv + recurrent) * F32_BYTES


@dataclass(frozen=True)
class AttnPlan:
    """Attention projections of one block.

    style: "gqa" (separate q/k/v/o), "fused_qkv" (phi3's attn_qkv), "mla", "deltanet".
    gated_q: Qwen3-Next's full-attention q projection carries an output gate (2x rows).
    """

    style: str
    n_heads: int
    n_kv_heads: int
    head_dim: int
    head_dim_v: int
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    sinks: bool = False
    gated_q: bool = False
    mla: MLASpec | None = None
    linear: LinearAttn | None = None


@dataclass(frozen=True)
class FfnPlan:
    """Feed-forward part of one block: dense (width > 0) or mixture of experts.

    shared_width: width of all shared experts together (DeepSeek n_shared_experts x
    moe_intermediate_size); shared_gate: Qwen2-MoE/Qwen3-Next sigmoid gate on it.
    """

    width: int = 0
    n_experts: int = 0
    expert_width: int = 0
    shared_width: int = 0
    shared_gate: bool = False
    router_bias: bool = False
    expert_bias: bool = False
    score_bias: bool = False
    fused_gate_up: bool = False


@dataclass(frozen=True)
class BlockPlan:
    """One transformer block: attention variant, window, projections, FFN, extra norms."""

    attention: str
    window_tokens: int | None
    attn: AttnPlan
    ffn: FfnPlan
    post_norms: bool = False


def _t(name: str, shape: tuple[int, ...], layer: int | None, kind: str) -> Tensor:
    """A Tensor; n_elements is the product of shape."""
    return Tensor(name=name, shape=shape, layer=layer, kind=kind)


def _gqa_tensors(i: int, hidden: int, a: AttnPlan) -> list[Tensor]:
    """q (heads x head_dim, x2 when gated), k and v (kv_heads x head_dim) rows of length
    hidden, attn_output (hidden rows of heads x head_dim_v); optional biases, QK-norm, sinks."""
    p = f"blk.{i}."
    q_rows = a.n_heads * a.head_dim * (2 if a.gated_q else 1)
    k_rows = a.n_kv_heads * a.head_dim
    v_rows = a.n_kv_heads * a.head_dim_v
    if a.style == "fused_qkv":
        out = [_t(p + "attn_qkv", (q_rows + k_rows + v_rows, hidden), i, "attn")]
    else:
        out = [
            _t(p + "attn_q", (q_rows, hidden), i, "attn"),
            _t(p + "attn_k", (k_rows, hidden), i, "attn"),
            _t(p + "attn_v", (v_rows, hidden), i, "attn"),
        ]
    out.append(_t(p + "attn_output", (hidden, a.n_heads * a.head_dim_v), i, "attn"))
    if a.qkv_bias:
        out += [
            _t(p + "attn_q.bias", (q_rows,), i, "bias"),
            _t(p + "attn_k.bias", (k_rows,), i, "bias"),
            _t(p + "attn_v.bias", (v_rows,), i, "bias"),
        ]
    if a.o_bias:
        out.append(_t(p + "attn_output.bias", (hidden,), i, "bias"))
    if a.qk_norm:
        out += [
            _t(p + "attn_q_norm", (a.head_dim,), i, "attn_norm"),
            _t(p + "attn_k_norm", (a.head_dim,), i, "attn_norm"),
        ]
    if a.sinks:
        out.append(_t(p + "attn_sinks", (a.n_heads,), i, "attn_norm"))
    return out


def _mla_tensors(i: int, hidden: int, a: AttnPlan, m: MLASpec) -> list[Tensor]:
    """DeepSeek MLA as llama.cpp's deepseek2 arch stores it (single attn_kv_b).

    Newer llama.cpp conversions split attn_kv_b into attn_k_b and attn_v_b with the same
    element count, so sizes agree to within block-rounding.
    """
    p = f"blk.{i}."
    qk_dim = m.qk_nope_head_dim + m.qk_rope_head_dim
    out: list[Tensor] = []
    if m.q_lora_rank is None:
        out.append(_t(p + "attn_q", (a.n_heads * qk_dim, hidden), i, "attn"))
    else:
        out += [
            _t(p + "attn_q_a", (m.q_lora_rank, hidden), i, "attn"),
            _t(p + "attn_q_a_norm", (m.q_lora_rank,), i, "attn_norm"),
            _t(p + "attn_q_b", (a.n_heads * qk_dim, m.q_lora_rank), i, "attn"),
        ]
    kv_b_rows = a.n_heads * (m.qk_nope_head_dim + m.v_head_dim)
    out += [
        _t(p + "attn_kv_a_mqa", (m.kv_lora_rank + m.qk_rope_head_dim, hidden), i, "attn"),
        _t(p + "attn_kv_a_norm", (m.kv_lora_rank,), i, "attn_norm"),
        _t(p + "attn_kv_b", (kv_b_rows, m.kv_lora_rank), i, "attn"),
        _t(p + "attn_output", (hidden, a.n_heads * m.v_head_dim), i, "attn"),
    ]
    return out


def _deltanet_tensors(i: int, hidden: int, lin: LinearAttn) -> list[Tensor]:
    """Qwen3-Next Gated DeltaNet: in_proj_qkvz, in_proj_ba, conv1d, dt_bias, A_log, norm,
    out_proj (transformers' Qwen3NextGatedDeltaNet)."""
    p = f"blk.{i}."
    qkvz_rows = 2 * lin.key_dim + 2 * lin.value_dim
    return [
        _t(p + "ssm_in", (qkvz_rows, hidden), i, "attn"),
        _t(p + "ssm_ba", (2 * lin.n_value_heads, hidden), i, "attn"),
        _t(p + "ssm_conv1d", (lin.conv_dim, lin.conv_kernel), i, "attn"),
        _t(p + "ssm_dt", (lin.n_value_heads,), i, "attn_norm"),
        _t(p + "ssm_a", (lin.n_value_heads,), i, "attn_norm"),
        _t(p + "ssm_norm", (lin.value_head_dim,), i, "attn_norm"),
        _t(p + "ssm_out", (hidden, lin.value_dim), i, "attn"),
    ]


def _dense_ffn(i: int, hidden: int, f: FfnPlan) -> list[Tensor]:
    """gate and up (width x hidden), down (hidden x width); phi3 fuses gate+up (2 x width)."""
    p = f"blk.{i}."
    if f.fused_gate_up:
        return [
            _t(p + "ffn_up", (2 * f.width, hidden), i, "ffn"),
            _t(p + "ffn_down", (hidden, f.width), i, "ffn"),
        ]
    return [
        _t(p + "ffn_gate", (f.width, hidden), i, "ffn"),
        _t(p + "ffn_up", (f.width, hidden), i, "ffn"),
        _t(p + "ffn_down", (hidden, f.width), i, "ffn"),
    ]


def _moe_ffn(i: int, hidden: int, f: FfnPlan) -> list[Tensor]:
    """Router (E x hidden), stacked experts (E, width, hidden) x2 and (E, hidden, width),
    optional router/expert biases, score bias, shared expert and its gate."""
    p = f"blk.{i}."
    e, w = f.n_experts, f.expert_width
    out = [
        _t(p + "ffn_gate_inp", (e, hidden), i, "router"),
        _t(p + "ffn_gate_exps", (e, w, hidden), i, "expert"),
        _t(p + "ffn_up_exps", (e, w, hidden), i, "expert"),
        _t(p + "ffn_down_exps", (e, hidden, w), i, "expert"),
    ]
    if f.router_bias:
        out.append(_t(p + "ffn_gate_inp.bias", (e,), i, "router"))
    if f.score_bias:
        out.append(_t(p + "exp_probs_b", (e,), i, "router"))
    if f.expert_bias:
        out += [
            _t(p + "ffn_gate_exps.bias", (e, w), i, "expert"),
            _t(p + "ffn_up_exps.bias", (e, w), i, "expert"),
            _t(p + "ffn_down_exps.bias", (e, hidden), i, "expert"),
        ]
    if f.shared_width:
        s = f.shared_width
        out += [
            _t(p + "ffn_gate_shexp", (s, hidden), i, "shared_expert"),
            _t(p + "ffn_up_shexp", (s, hidden), i, "shared_expert"),
            _t(p + "ffn_down_shexp", (hidden, s), i, "shared_expert"),
        ]
    if f.shared_gate:
        out.append(_t(p + "ffn_gate_inp_shexp", (hidden,), i, "router"))
    return out


def block_tensors(i: int, hidden: int, plan: BlockPlan) -> list[Tensor]:
    """Every weight of block i: norms, attention, FFN (dense or MoE), in llama.cpp names."""
    p = f"blk.{i}."
    a = plan.attn
    out = [_t(p + "attn_norm", (hidden,), i, "norm")]
    if a.style == "mla" and a.mla is not None:
        out += _mla_tensors(i, hidden, a, a.mla)
    elif a.style == "deltanet" and a.linear is not None:
        out += _deltanet_tensors(i, hidden, a.linear)
    else:
        out += _gqa_tensors(i, hidden, a)
    if plan.post_norms:
        out.append(_t(p + "post_attention_norm", (hidden,), i, "norm"))
    out.append(_t(p + "ffn_norm", (hidden,), i, "norm"))
    out += _moe_ffn(i, hidden, plan.ffn) if plan.ffn.n_experts else _dense_ffn(i, hidden, plan.ffn)
    if plan.post_norms:
        out.append(_t(p + "post_ffw_norm", (hidden,), i, "norm"))
    return out


def global_tensors(vocab: int, hidden: int, tied: bool) -> list[Tensor]:
    """token_embd, output_norm and (when not tied) output."""
    out = [
        _t("token_embd", (vocab, hidden), None, "embedding"),
        _t("output_norm", (hidden,), None, "norm"),
    ]
    if not tied:
        out.append(_t("output", (vocab, hidden), None, "output"))
    return out


def layer_spec(i: int, plan: BlockPlan) -> LayerSpec:
    """The LayerSpec of block i (see LayerSpec for the MLA and linear conventions)."""
    a = plan.attn
    is_moe = plan.ffn.n_experts > 0
    if a.style == "mla" and a.mla is not None:
        m = a.mla
        return LayerSpec(i, "mla", None, 1, m.kv_lora_rank + m.qk_rope_head_dim,
                         m.kv_lora_rank, is_moe)
    if a.style == "deltanet" and a.linear is not None:
        return LayerSpec(i, "linear", None, 0, 0, 0, is_moe, a.linear.state_bytes_per_seq)
    return LayerSpec(i, plan.attention, plan.window_tokens, a.n_kv_heads, a.head_dim,
                     a.head_dim_v, is_moe)
