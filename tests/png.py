"""A minimal PNG reader (8-bit RGB/RGBA, not interlaced) for tests that look at screenshots:
no image library is a dependency of the project."""
import struct
import zlib

import numpy as np


def read_png(path) -> np.ndarray:
    """The image as a height x width x 3 array of uint8."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and not interlace, header
    bpp = 3 if colour == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8).reshape(height, 1 + width * bpp)
    out = np.zeros((height, width * bpp), dtype=np.uint8)
    prev = np.zeros(width * bpp, dtype=np.int64)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:].astype(np.int64)
        if kind == 0:
            row = line
        elif kind == 2:
            row = (line + prev) % 256
        elif kind == 1:
            row = (np.cumsum(line.reshape(-1, bpp), axis=0) % 256).ravel()
        else:
            row, above = line.tolist(), prev.tolist()   # Average (3) and Paeth (4) run left to right
            for i in range(len(row)):
                left = row[i - bpp] if i >= bpp else 0
                up, ul = above[i], (above[i - bpp] if i >= bpp else 0)
                if kind == 3:
                    row[i] = (row[i] + (left + up) // 2) & 255
                else:
                    p = left + up - ul
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - ul)
                    row[i] = (row[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else ul)) & 255
            row = np.array(row, dtype=np.int64)
        out[y], prev = row, row
    return out.reshape(height, width, bpp)[:, :, :3]
