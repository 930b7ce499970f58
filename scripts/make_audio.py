#!/usr/bin/python3
"""Writes the quick start's input: one second of 16 kHz audio as a float32 .npy of shape
[1, 16000], in the 16-bit sample range openWakeWord's melspectrogram model expects. The signal
is deterministic (no randomness): a chirp from 220 to 880 Hz with its third harmonic, faded in
and out over 50 ms, then 0.2 s of silence-level noise made by a fixed linear congruential
sequence at the end.

usage: /usr/bin/python3 scripts/make_audio.py OUT.npy
"""
import sys

import numpy as np


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    sr = 16000
    t = np.arange(sr) / sr
    phase = 2 * np.pi * np.cumsum(220 + 660 * t) / sr
    x = 0.3 * np.sin(phase) + 0.1 * np.sin(3 * phase)
    x *= np.minimum(1.0, np.minimum(t, 0.8 - t).clip(0) * 20)
    lcg = (np.arange(sr, dtype=np.uint64) * 1103515245 + 12345) % (1 << 31)
    x[int(0.8 * sr):] = (lcg[int(0.8 * sr):] / float(1 << 31) - 0.5) * 1e-3
    np.save(sys.argv[1], (x * 32767).astype(np.float32)[None, :])
    return 0


if __name__ == "__main__":
    sys.exit(main())
