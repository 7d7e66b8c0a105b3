#!/usr/bin/env python3
"""Draws Collie's app icons (a terminal prompt, `>_`) as PNG files, with the standard library only.

Run from this folder: `python3 make_icons.py` writes icon-192.png and icon-512.png. icon.svg is the
same drawing by hand. The background fills the whole square so the icon also works as `maskable`
(the drawing stays inside the central safe zone).
"""

import struct
import zlib

BG = (0x14, 0x18, 0x1C)
CHEVRON = (0x4F, 0xD1, 0xC5)
BAR = (0xE8, 0xEA, 0xED)
HALF_WIDTH = 0.045  # half the stroke width, in units of the icon size
CHEVRON_PATH = [(0.30, 0.33), (0.50, 0.50), (0.30, 0.67)]
BAR_BOX = (0.54, 0.625, 0.74, 0.695)  # x0, y0, x1, y1
SAMPLES = 3  # per axis, for anti-aliasing


def seg_dist(px, py, a, b):
    ax, ay = a
    bx, by = b
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)))
    cx, cy = ax + t * dx, ay + t * dy
    return ((px - cx) ** 2 + (py - cy) ** 2) ** 0.5


def colour_at(x, y):
    for a, b in zip(CHEVRON_PATH, CHEVRON_PATH[1:]):
        if seg_dist(x, y, a, b) <= HALF_WIDTH:
            return CHEVRON
    x0, y0, x1, y1 = BAR_BOX
    if x0 <= x <= x1 and y0 <= y <= y1:
        return BAR
    return BG


def render(size):
    rows = []
    step = 1.0 / (size * SAMPLES)
    for py in range(size):
        row = bytearray([0])  # filter: none
        for px in range(size):
            r = g = b = 0
            for sy in range(SAMPLES):
                for sx in range(SAMPLES):
                    c = colour_at((px * SAMPLES + sx + 0.5) * step, (py * SAMPLES + sy + 0.5) * step)
                    r, g, b = r + c[0], g + c[1], b + c[2]
            n = SAMPLES * SAMPLES
            row += bytes((round(r / n), round(g / n), round(b / n)))
        rows.append(bytes(row))
    return b"".join(rows)


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def png(size):
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(render(size), 9))
        + chunk(b"IEND", b"")
    )


if __name__ == "__main__":
    for size in (192, 512):
        with open(f"icon-{size}.png", "wb") as f:
            f.write(png(size))
