"""Vision encoder and projector tensors of multimodal checkpoints (llama.cpp's mmproj).

Estimated from vision_config, not read from a weights index: a ViT of
num_hidden_layers (or depth) blocks of width hidden_size (or embed_dim), each with
q/k/v/o projections plus biases, two LayerNorms (weight + bias) and a two-matrix MLP of
intermediate_size with biases; a patch embedding of 3 x patch^2 x width (+ bias), a
learned position embedding of (image_size / patch_size)^2 x width and a final LayerNorm.
The projector depends on the family (see each function). Expected error: a few percent
of the tower (class tokens, gated MLPs, temporal patches are approximated).
"""

from __future__ import annotations

from estimator.model.fields import MAX_LAYERS, Config, get_int, get_sub
from estimator.model.spec import Tensor

CHANNELS = 3


def _t(name: str, shape: tuple[int, ...], kind: str) -> Tensor:
    """A global (layer None) multimodal Tensor."""
    return Tensor(name=name, shape=shape, layer=None, kind=kind)


def _vit_tensors(vc: Config) -> tuple[list[Tensor], int]:
    """ViT encoder tensors in llama.cpp mmproj names (v.*) and the encoder width."""
    # Qwen2-VL names the encoder width embed_dim and uses hidden_size for the output.
    width_key = "embed_dim" if "embed_dim" in vc else "hidden_size"
    width = get_int(vc, width_key, 768)
    layers = get_int(vc, "num_hidden_layers", 0, minimum=0, maximum=MAX_LAYERS) or get_int(
        vc, "depth", 12, maximum=MAX_LAYERS
    )
    ffn = get_int(vc, "intermediate_size", 0, minimum=0) or width * 4
    patch = get_int(vc, "patch_size", 14)
    image = get_int(vc, "image_size", 224)
    # Qwen3-VL / Qwen3.5: Conv3d patches over temporal_patch_size frames and a learned
    # table of num_position_embeddings positions.
    temporal = get_int(vc, "temporal_patch_size", 1)
    positions = get_int(vc, "num_position_embeddings", 0, minimum=0) or (image // patch) ** 2
    out = [
        _t("v.patch_embd", (width, CHANNELS * temporal * patch * patch), "vision"),
        _t("v.patch_embd.bias", (width,), "vision"),
        _t("v.position_embd", (positions, width), "vision"),
        _t("v.post_ln", (2, width), "vision"),
    ]
    for i in range(layers):
        p = f"v.blk.{i}."
        out += [
            _t(p + n, (width, width), "vision") for n in ("attn_q", "attn_k", "attn_v", "attn_out")
        ]
        out += [
            _t(p + "attn_bias", (4, width), "vision"),
            _t(p + "ln", (4, width), "vision"),
            _t(p + "ffn_up", (ffn, width), "vision"),
            _t(p + "ffn_up.bias", (ffn,), "vision"),
            _t(p + "ffn_down", (width, ffn), "vision"),
            _t(p + "ffn_down.bias", (width,), "vision"),
        ]
    return out, width


def _projector(
    model_type: str, config: Config, vc: Config, width: int, text_hidden: int
) -> list[Tensor]:
    """gemma3: soft-embedding RMSNorm + (width -> text hidden) matrix.
    llama4: pixel-shuffle MLP (intermediate -> projector_input_dim -> projector_output_dim)
    and linear (vision_output_dim -> text hidden).
    qwen2-vl family: merger LayerNorm + MLP (width x merge^2 -> same -> out_hidden_size).
    others: one linear layer width -> text hidden (+ bias)."""
    if model_type == "gemma3":
        return [
            _t("mm.soft_emb_norm", (width,), "projector"),
            _t("mm.input_projection", (text_hidden, width), "projector"),
        ]
    if model_type == "llama4":
        inner = get_int(vc, "intermediate_size", width * 4)
        p_in = get_int(vc, "projector_input_dim", 4096)
        p_out = get_int(vc, "projector_output_dim", 4096)
        v_out = get_int(vc, "vision_output_dim", p_out)
        return [
            _t("mm.adapter.fc1", (p_in, inner), "projector"),
            _t("mm.adapter.fc2", (p_out, p_out), "projector"),
            _t("mm.linear_1", (text_hidden, v_out), "projector"),
        ]
    if model_type.startswith(("qwen3_vl", "qwen3_5")):
        return _qwen3_mergers(vc, width, text_hidden)
    if model_type.startswith("qwen2") and "vl" in model_type:
        merged = width * get_int(vc, "spatial_merge_size", 2) ** 2
        out_dim = get_int(vc, "out_hidden_size", 0, minimum=0) or text_hidden
        return [
            _t("mm.ln_q", (width,), "projector"),
            _t("mm.0", (merged, merged), "projector"),
            _t("mm.2", (out_dim, merged), "projector"),
        ]
    return [
        _t("mm.input_projection", (text_hidden, width), "projector"),
        _t("mm.input_projection.bias", (text_hidden,), "projector"),
    ]


def _qwen3_mergers(vc: Config, width: int, text_hidden: int) -> list[Tensor]:
    """Qwen3-VL / Qwen3.5 patch merger (LayerNorm + width x merge^2 -> same -> out_hidden_size
    MLP with biases), repeated once per deepstack_visual_indexes entry (transformers
    Qwen3VLVisionModel.merger and deepstack_merger_list)."""
    merged = width * get_int(vc, "spatial_merge_size", 2) ** 2
    out_dim = get_int(vc, "out_hidden_size", 0, minimum=0) or text_hidden
    indexes = vc.get("deepstack_visual_indexes")
    count = 1 + (len(indexes) if isinstance(indexes, list) else 0)
    out: list[Tensor] = []
    for i in range(count):
        p = "mm." if i == 0 else f"mm.deepstack.{i - 1}."
        out += [
            _t(p + "norm", (2, merged), "projector"),
            _t(p + "fc1", (merged, merged), "projector"),
            _t(p + "fc1.bias", (merged,), "projector"),
            _t(p + "fc2", (out_dim, merged), "projector"),
            _t(p + "fc2.bias", (out_dim,), "projector"),
        ]
    return out


def multimodal_tensors(
    model_type: str, config: Config, text_hidden: int
) -> tuple[tuple[Tensor, ...], tuple[str, ...]]:
    """Vision tower + projector tensors and a note saying how they were estimated.

    Audio towers (audio_config) are noted but not sized.
    """
    notes: list[str] = []
    vc = get_sub(config, "vision_config")
    out: list[Tensor] = []
    if vc is not None:
        tower, width = _vit_tensors(vc)
        out = tower + _projector(model_type, config, vc, width, text_hidden)
        notes.append(
            "vision tower estimated from vision_config (ViT layers, width, MLP, "
            "patch and image size) plus a family projector; expect a few % error"
        )
    if get_sub(config, "audio_config") is not None:
        notes.append("audio tower present but not sized")
    return tuple(out), tuple(notes)
