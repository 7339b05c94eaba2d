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
class Mamba2:
    """Mamba2 mixer dimensions (Nemotron-H, Falcon-H1): d_inner = n_heads x head_dim."""

    n_heads: int
    head_dim: int
    state_size: int
    n_groups: int
    conv_kernel: int

    @property
    def d_inner(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        """Channels of the causal conv: x plus B and C (n_groups x state_size each)."""
        return self.d_inner + 2 * self.n_groups * self.state_size

    @property
    def state_bytes_per_seq(self) -> int:
        """Fixed state per sequence, f32 as llama.cpp keeps it (mamba_ssm_cache_dtype
        float32 in NVIDIA's configs): conv state (kernel - 1) x conv_dim plus SSM state
        n_heads x head_dim x state_size, times 4 bytes. Nemotron-H-56B: (3 x 20480 +
        256 x 64 x 256) x 4 = 17,022,976 bytes per Mamba layer."""
        conv = (self.conv_kernel - 1) * self.conv_dim
        ssm = self.n_heads * self.head_dim * self.state_size
        return (conv + ssm) * F32_BYTES


@dataclass(frozen=True)
class Lightning:
    """MiniMax lightning attention (MiniMax-Text-01 / MiniMax-M1): linear attention with a
    per-head exponential decay, n_heads x head_dim for q, k and v alike."""

    n_heads: int
    head_dim: int

    @property
    def inner_dim(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def state_bytes_per_seq(self) -> int:
        """Fixed state per sequence: one head_dim x head_dim kv matrix per head, f32 as the
        reference modeling_minimax_m1.py keeps it (no conv state). MiniMax-M1: 64 x 128 x
        128 x 4 = 4,194,304 bytes per lightning layer. vLLM keeps it in the model dtype
        (half of this)."""
        return self.n_heads * self.head_dim * self.head_dim * F32_BYTES


@dataclass(frozen=True)
class Indexer:
    """DeepSeek sparse attention (DSA) lightning indexer of DeepSeek-V3.2 and GLM-5.

    DeepSeek-V3.2-Exp inference/model.py Indexer: wq_b (n_heads x head_dim rows of
    q_lora_rank), wk (head_dim rows of hidden), k_norm LayerNorm (weight + bias),
    weights_proj (n_heads rows of hidden). It also caches one head_dim key per token.
    """

    n_heads: int
    head_dim: int


@dataclass(frozen=True)
class AttnPlan:
    """Attention projections of one block.

    style: "gqa" (separate q/k/v/o), "fused_qkv" (phi3's attn_qkv), "mla", "deltanet",
    "mamba2" (Mamba2 mixer instead of attention), "lightning" (MiniMax linear attention),
    "none" (no mixer: DeciLM no_op attention, Nemotron-H MLP-only layers).
    gated_q: Qwen3-Next's full-attention q projection carries an output gate (2x rows).
    k_eq_v: Gemma 4 full-attention layers use K as V (no attn_v tensor).
    linear_o: DeciLM replace_with_linear: a single hidden x hidden matrix, nothing cached.
    shares_kv: cross-layer attention (Hunyuan CLA): q and o only, K and V reused from an
    earlier layer, so the block caches nothing of its own.
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
    k_eq_v: bool = False
    indexer: Indexer | None = None
    mamba: Mamba2 | None = None
    linear_o: bool = False
    lightning: Lightning | None = None
    shares_kv: bool = False


@dataclass(frozen=True)
class FfnPlan:
    """Feed-forward part of one block: dense (width > 0) or mixture of experts.

    shared_width: width of all shared experts together (DeepSeek n_shared_experts x
    moe_intermediate_size); shared_gate: Qwen2-MoE/Qwen3-Next sigmoid gate on it.
    width and n_experts both set: a dense MLP in parallel with the experts (Gemma 4).
    Neither set: the block has no FFN (Mamba / attention-only Nemotron-H layers).
    gated False: up and down only (Nemotron-H's relu2 MLP and experts).
    latent_size: Nemotron-3 LatentMoE: experts run at this width, with a down projection
    hidden -> latent before them and an up projection latent -> hidden after.
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
    gated: bool = True
    latent_size: int = 0


@dataclass(frozen=True)
class BlockPlan:
    """One transformer block: attention variant, window, projections, FFN, extra norms."""

    attention: str
    window_tokens: int | None
    attn: AttnPlan
    ffn: FfnPlan
    post_norms: bool = False
    extra_norms: tuple[str, ...] = ()


def _t(name: str, shape: tuple[int, ...], layer: int | None, kind: str) -> Tensor:
    """A Tensor; n_elements is the product of shape."""
    return Tensor(name=name, shape=shape, layer=layer, kind=kind)


def _gqa_tensors(i: int, hidden: int, a: AttnPlan) -> list[Tensor]:
    """q (heads x head_dim, x2 when gated), k and v (kv_heads x head_dim) rows of length
    hidden, attn_output (hidden rows of heads x head_dim_v); optional biases, QK-norm, sinks.
    A shares_kv (CLA) block has no k and v projections."""
    p = f"blk.{i}."
    q_rows = a.n_heads * a.head_dim * (2 if a.gated_q else 1)
    k_rows = a.n_kv_heads * a.head_dim
    v_rows = a.n_kv_heads * a.head_dim_v
    if a.shares_kv:
        out = [_t(p + "attn_q", (q_rows, hidden), i, "attn")]
    elif a.style == "fused_qkv":
        out = [_t(p + "attn_qkv", (q_rows + k_rows + v_rows, hidden), i, "attn")]
    else:
        out = [
            _t(p + "attn_q", (q_rows, hidden), i, "attn"),
            _t(p + "attn_k", (k_rows, hidden), i, "attn"),
        ]
        if not a.k_eq_v:
            out.append(_t(p + "attn_v", (v_rows, hidden), i, "attn"))
    out.append(_t(p + "attn_output", (hidden, a.n_heads * a.head_dim_v), i, "attn"))
    if a.qkv_bias:
        out.append(_t(p + "attn_q.bias", (q_rows,), i, "bias"))
        if not a.shares_kv:
            out += [
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
    if a.indexer is not None:
        out += _indexer_tensors(i, hidden, a.indexer, m.q_lora_rank or hidden)
    return out


def _indexer_tensors(i: int, hidden: int, ix: Indexer, q_rank: int) -> list[Tensor]:
    """DSA indexer: wq_b (heads x head_dim, q_lora_rank), wk (head_dim, hidden), k_norm
    weight + bias, weights_proj (heads, hidden) -- DeepSeek-V3.2-Exp inference/model.py."""
    p = f"blk.{i}.indexer."
    return [
        _t(p + "attn_q_b", (ix.n_heads * ix.head_dim, q_rank), i, "attn"),
        _t(p + "attn_k", (ix.head_dim, hidden), i, "attn"),
        _t(p + "k_norm", (2, ix.head_dim), i, "attn_norm"),
        _t(p + "proj", (ix.n_heads, hidden), i, "attn"),
    ]


def _mamba_tensors(i: int, hidden: int, m: Mamba2, bias: bool) -> list[Tensor]:
    """Mamba2 mixer (transformers NemotronHMamba2Mixer): in_proj of 2 x d_inner +
    2 x n_groups x state + n_heads rows (z, x, B, C, dt), conv1d (conv_dim x kernel, + bias),
    dt_bias, A_log and D (n_heads each), gated RMSNorm (d_inner), out_proj (hidden x d_inner)."""
    p = f"blk.{i}."
    in_rows = 2 * m.d_inner + 2 * m.n_groups * m.state_size + m.n_heads
    out = [
        _t(p + "ssm_in", (in_rows, hidden), i, "attn"),
        _t(p + "ssm_conv1d", (m.conv_dim, m.conv_kernel), i, "attn"),
        _t(p + "ssm_dt", (m.n_heads,), i, "attn_norm"),
        _t(p + "ssm_a", (m.n_heads,), i, "attn_norm"),
        _t(p + "ssm_d", (m.n_heads,), i, "attn_norm"),
        _t(p + "ssm_norm", (m.d_inner,), i, "attn_norm"),
        _t(p + "ssm_out", (hidden, m.d_inner), i, "attn"),
    ]
    if bias:
        out.append(_t(p + "ssm_conv1d.bias", (m.conv_dim,), i, "bias"))
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


def _lightning_tensors(i: int, hidden: int, la: Lightning) -> list[Tensor]:
    """MiniMax lightning attention (modeling_minimax_m1.py MiniMaxM1LightningAttention):
    qkv_proj (3 x inner rows), output_gate (inner rows, a sigmoid gate on the output), an
    RMSNorm over all heads (inner), out_proj (hidden x inner); no biases. Named with
    llama.cpp's generic tensor names; the minimax-01 converter's own names were not checked
    (element counts do not depend on them)."""
    p = f"blk.{i}."
    return [
        _t(p + "attn_qkv", (3 * la.inner_dim, hidden), i, "attn"),
        _t(p + "attn_gate", (la.inner_dim, hidden), i, "attn"),
        _t(p + "attn_sub_norm", (la.inner_dim,), i, "attn_norm"),
        _t(p + "attn_output", (hidden, la.inner_dim), i, "attn"),
    ]


def _dense_ffn(i: int, hidden: int, f: FfnPlan) -> list[Tensor]:
    """gate and up (width x hidden), down (hidden x width); phi3 fuses gate+up (2 x width)."""
    p = f"blk.{i}."
    if not f.gated:
        return [
            _t(p + "ffn_up", (f.width, hidden), i, "ffn"),
            _t(p + "ffn_down", (hidden, f.width), i, "ffn"),
        ]
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
    """Router (E x hidden), stacked experts (E, width, hidden) x2 and (E, hidden, width)
    (no gate when not gated; the latent width instead of hidden for LatentMoE, plus its two
    projections), optional router/expert biases, score bias, shared expert and its gate."""
    p = f"blk.{i}."
    e, w = f.n_experts, f.expert_width
    d = f.latent_size or hidden
    out = [_t(p + "ffn_gate_inp", (e, hidden), i, "router")]
    if f.gated:
        out.append(_t(p + "ffn_gate_exps", (e, w, d), i, "expert"))
    out += [
        _t(p + "ffn_up_exps", (e, w, d), i, "expert"),
        _t(p + "ffn_down_exps", (e, d, w), i, "expert"),
    ]
    if f.latent_size:
        out += [
            _t(p + "ffn_latent_in", (d, hidden), i, "ffn"),
            _t(p + "ffn_latent_out", (hidden, d), i, "ffn"),
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
        if f.gated:
            out.append(_t(p + "ffn_gate_shexp", (s, hidden), i, "shared_expert"))
        out += [
            _t(p + "ffn_up_shexp", (s, hidden), i, "shared_expert"),
            _t(p + "ffn_down_shexp", (hidden, s), i, "shared_expert"),
        ]
    if f.shared_gate:
        out.append(_t(p + "ffn_gate_inp_shexp", (hidden,), i, "router"))
    return out


def _mixer_tensors(i: int, hidden: int, a: AttnPlan) -> list[Tensor]:
    """The block's token mixer: attention of any style, a Mamba2 mixer, or nothing."""
    if a.style == "none":
        return []
    if a.linear_o:
        return [_t(f"blk.{i}.attn_linear", (hidden, hidden), i, "attn")]
    if a.style == "mla" and a.mla is not None:
        return _mla_tensors(i, hidden, a, a.mla)
    if a.style == "deltanet" and a.linear is not None:
        return _deltanet_tensors(i, hidden, a.linear)
    if a.style == "mamba2" and a.mamba is not None:
        return _mamba_tensors(i, hidden, a.mamba, a.qkv_bias)
    if a.style == "lightning" and a.lightning is not None:
        return _lightning_tensors(i, hidden, a.lightning)
    return _gqa_tensors(i, hidden, a)


def block_tensors(i: int, hidden: int, plan: BlockPlan) -> list[Tensor]:
    """Every weight of block i: norms, mixer, FFN (dense, MoE, both or none), in llama.cpp
    names. A block without a mixer has no attn_norm; one without an FFN has no ffn_norm."""
    p = f"blk.{i}."
    f = plan.ffn
    out = [] if plan.attn.style == "none" else [_t(p + "attn_norm", (hidden,), i, "norm")]
    out += _mixer_tensors(i, hidden, plan.attn)
    if plan.post_norms:
        out.append(_t(p + "post_attention_norm", (hidden,), i, "norm"))
    if f.width or f.n_experts:
        out.append(_t(p + "ffn_norm", (hidden,), i, "norm"))
    if f.n_experts:
        out += _moe_ffn(i, hidden, f)
    if f.width:
        out += _dense_ffn(i, hidden, f)
    if plan.post_norms:
        out.append(_t(p + "post_ffw_norm", (hidden,), i, "norm"))
    out += [_t(p + name, (hidden,), i, "norm") for name in plan.extra_norms]
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
    """The LayerSpec of block i (see LayerSpec for the MLA and linear conventions).

    Mamba2 and lightning layers are "linear" with their f32 state; layers without attention
    (DeciLM no_op / replace_with_linear, Nemotron-H MLP and MoE layers) and CLA layers that
    read an earlier layer's K and V are "linear" with a zero state, so cache sizers give
    them no cells and no state. An MLA layer with its own DSA indexer records the indexer
    key width (LayerSpec.indexer_head_dim)."""
    a = plan.attn
    is_moe = plan.ffn.n_experts > 0
    if a.style == "mla" and a.mla is not None:
        m = a.mla
        return LayerSpec(
            i,
            "mla",
            None,
            1,
            m.kv_lora_rank + m.qk_rope_head_dim,
            m.kv_lora_rank,
            is_moe,
            indexer_head_dim=a.indexer.head_dim if a.indexer is not None else 0,
        )
    if a.style == "deltanet" and a.linear is not None:
        return LayerSpec(i, "linear", None, 0, 0, 0, is_moe, a.linear.state_bytes_per_seq)
    if a.style == "mamba2" and a.mamba is not None:
        return LayerSpec(i, "linear", None, 0, 0, 0, is_moe, a.mamba.state_bytes_per_seq)
    if a.style == "lightning" and a.lightning is not None:
        return LayerSpec(i, "linear", None, 0, 0, 0, is_moe, a.lightning.state_bytes_per_seq)
    if a.style == "none" or a.linear_o or a.shares_kv:
        # No mixer that looks back, or one reading another layer's cache: nothing of its own.
        return LayerSpec(i, "linear", None, 0, 0, 0, is_moe, 0)
    return LayerSpec(
        i, plan.attention, plan.window_tokens, a.n_kv_heads, a.head_dim, a.head_dim_v, is_moe
    )
