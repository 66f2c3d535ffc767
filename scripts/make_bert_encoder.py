#!/usr/bin/python3
"""Writes a BERT-base-sized transformer encoder as ONNX, for sizing the plan (issue 14).

12 pre-LN encoder layers, hidden 768, 12 heads, feed-forward 3072 with GELU, sequence 128:
BERT-base's shape without its embeddings and heads (85 M parameters, 340 MB of fp32 weights).
Weights are random with a fixed seed; the model is for memory and cycle estimates, so it is
not committed (make it with this script).

With --classes C it ends in BERT's sequence-classification head (the first token through the
pooler's Dense + tanh, then a Dense to C logits), so it trains with sparse categorical
cross-entropy as a fine-tuning run does.

usage: /usr/bin/python3 scripts/make_bert_encoder.py OUT.onnx [--layers N] [--hidden D] [--seq T] [--classes C]
"""
import argparse
import math

import torch
import torch.nn as nn


class EncoderLayer(nn.Module):
    # Shapes are Python numbers, not read off the tensors, so the export's Reshapes take constant
    # shapes (-1 for the batch) rather than Shape/Gather/Concat chains.
    def __init__(self, hidden, heads, ff, seq):
        super().__init__()
        self.hidden, self.seq, self.heads, self.head_dim = hidden, seq, heads, hidden // heads
        self.norm_attention = nn.LayerNorm(hidden)
        self.query, self.key, self.value = (nn.Linear(hidden, hidden) for _ in range(3))
        self.attention_out = nn.Linear(hidden, hidden)
        self.norm_ff = nn.LayerNorm(hidden)
        self.ff_in = nn.Linear(hidden, ff)
        self.ff_out = nn.Linear(ff, hidden)
        self.gelu = nn.GELU()

    def split_heads(self, x):  # [B, T, D] -> [B, H, T, D/H]
        return x.reshape(-1, self.seq, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        y = self.norm_attention(x)
        q, k, v = self.split_heads(self.query(y)), self.split_heads(self.key(y)), self.split_heads(self.value(y))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        context = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(-1, self.seq, self.hidden)
        x = x + self.attention_out(context)
        return x + self.ff_out(self.gelu(self.ff_in(self.norm_ff(x))))


class ClassificationHead(nn.Module):
    def __init__(self, hidden, classes):
        super().__init__()
        self.pooler = nn.Linear(hidden, hidden)
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, x):  # [B, T, D] -> [B, classes]
        return self.classifier(torch.tanh(self.pooler(x[:, 0])))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--classes", type=int, default=0, help="end in a classification head with this many classes")
    args = parser.parse_args()
    torch.manual_seed(0)
    layers = [EncoderLayer(args.hidden, args.heads, 4 * args.hidden, args.seq) for _ in range(args.layers)]
    if args.classes:
        layers.append(ClassificationHead(args.hidden, args.classes))
    model = nn.Sequential(*layers).eval()
    example = torch.randn(1, args.seq, args.hidden)
    torch.onnx.export(model, example, args.out, opset_version=14, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})


if __name__ == "__main__":
    main()
