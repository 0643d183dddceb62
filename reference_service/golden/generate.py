"""Deterministic generator of the golden set: synthetic document images with ground truth.

Run with the service venv: ``python -m reference_service.golden.generate`` (seeded; the
same fonts give byte-identical PNGs). Fonts come from Debian's fonts-dejavu-core,
fonts-liberation and fonts-noto-core (see mk/reference_service.mk).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

HERE = Path(__file__).resolve().parent
FONT_DIR = Path("/usr/share/fonts/truetype")
FONTS = [
    "dejavu/DejaVuSans.ttf",
    "dejavu/DejaVuSerif.ttf",
    "dejavu/DejaVuSansCondensed.ttf",
    "liberation/LiberationSans-Regular.ttf",
    "liberation/LiberationSerif-Regular.ttf",
    "liberation/LiberationMono-Regular.ttf",
    "noto/NotoSans-Regular.ttf",
    "noto/NotoSerif-Regular.ttf",
]
WORDS = (  # noqa: SIM905 - a word list reads better as prose
    "invoice order total amount due date customer account number payment received "
    "service model latency budget queue batch server request response image text "
    "page document shipping address street city report quarter revenue balance "
    "reference contract section clause signed approved review status pending "
    "delivery package weight price unit quantity tax discount subtotal note "
    "please contact support office phone email within days after before final "
    "summary monthly annual project team manager owner version release update "
    "north south east west river park station bridge market garden green blue"
).split()


def _line(rng: random.Random) -> str:
    kind = rng.random()
    words = rng.sample(WORDS, rng.randint(3, 6))
    if kind < 0.25:
        words.append(f"{rng.randint(1, 9999)}.{rng.randint(0, 99):02d}")
    elif kind < 0.45:
        words.insert(0, f"{rng.randint(1, 28):02d}/{rng.randint(1, 12):02d}/{rng.randint(2019, 2026)}")
    elif kind < 0.6:
        words.append(f"No. {rng.randint(100, 99999)}")
    text = " ".join(words)
    return text[0].upper() + text[1:]


def _fitted_lines(rng: random.Random, font: ImageFont.FreeTypeFont, room: int, count: int) -> list[str]:
    """``count`` random lines, each cut at a word boundary to fit ``room`` pixels."""
    lines: list[str] = []
    for _ in range(count):
        text = _line(rng)
        while font.getlength(text) > room and " " in text:
            text = text.rsplit(" ", 1)[0]
        lines.append(text)
    return lines


def render(index: int, seed: int) -> tuple[Image.Image, dict]:
    """Render document ``index``; returns the image and its ground-truth record."""
    rng = random.Random(seed * 100_003 + index)
    font_name = FONTS[index % len(FONTS)]
    size = rng.choice([28, 30, 32, 34, 36, 40])
    font = ImageFont.truetype(str(FONT_DIR / font_name), size)
    width = rng.choice([720, 800, 880, 960])
    margin = rng.randint(24, 48)
    lines = _fitted_lines(rng, font, width - 2 * margin, rng.randint(4, 9))
    spacing = int(size * rng.uniform(1.5, 2.0))
    height = 2 * margin + spacing * len(lines)
    bg = rng.randint(228, 255)
    ink = rng.randint(0, 60)
    img = Image.new("L", (width, height), bg)
    draw = ImageDraw.Draw(img)
    records = []
    for i, text in enumerate(lines):
        x, y = margin + rng.randint(0, 12), margin + i * spacing
        draw.text((x, y), text, font=font, fill=ink)
        records.append({"text": text, "bbox": list(draw.textbbox((x, y), text, font=font))})
    blur = rng.choice([0.0, 0.0, 0.4, 0.6])
    if blur:
        img = img.filter(ImageFilter.GaussianBlur(blur))
    # Speckle noise (a fraction of pixels set to random grey levels, quantised to 16 levels)
    # rather than dense Gaussian noise: similar difficulty, keeps the PNGs small.
    noise = rng.choice([0.0, 0.01, 0.02, 0.04])
    if noise:
        gen = np.random.default_rng(seed * 7919 + index)
        arr = np.asarray(img, dtype=np.uint8).copy()
        mask = gen.random(arr.shape) < noise
        arr[mask] = (gen.integers(0, 16, int(mask.sum())) * 17).astype(np.uint8)
        img = Image.fromarray(arr, "L")
    meta = {"font": font_name, "font_px": size, "speckle_fraction": noise, "blur": blur, "lines": records}
    return img, meta


HARD_DIR = HERE / "hard"
HARD_SEED = 18


def render_hard(index: int, seed: int) -> tuple[bytes, dict]:
    """A harder page: 20-26 px fonts, rotated a few degrees, low contrast, JPEG artefacts.

    Returns the JPEG bytes and the ground truth. A speed-up that only holds on clean 28-40 px
    pages (the main set) shows here: smaller glyphs suffer first when the detector's input
    is shrunk, rotation tests the box cropping, and JPEG ringing tests the recogniser.
    """
    import io

    rng = random.Random(seed * 100_003 + index)
    font_name = FONTS[index % len(FONTS)]
    size = rng.choice([20, 22, 24, 26])
    font = ImageFont.truetype(str(FONT_DIR / font_name), size)
    width = rng.choice([720, 800, 880, 960])
    margin = rng.randint(32, 56)
    lines = _fitted_lines(rng, font, width - 2 * margin, rng.randint(5, 10))
    spacing = int(size * rng.uniform(1.6, 2.1))
    height = 2 * margin + spacing * len(lines)
    # Low contrast: ink and paper 60-120 grey levels apart (the main set: 170-255).
    bg = rng.randint(170, 215)
    ink = bg - rng.randint(60, 120)
    img = Image.new("L", (width, height), bg)
    draw = ImageDraw.Draw(img)
    for i, text in enumerate(lines):
        draw.text((margin + rng.randint(0, 12), margin + i * spacing), text, font=font, fill=ink)
    angle = rng.choice([-3.0, -2.0, -1.0, 1.0, 2.0, 3.0])
    img = img.rotate(angle, resample=Image.Resampling.BICUBIC, expand=False, fillcolor=bg)
    img = img.filter(ImageFilter.GaussianBlur(rng.choice([0.0, 0.5])))
    quality = rng.choice([35, 45, 55])
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=quality)
    meta = {
        "font": font_name,
        "font_px": size,
        "rotation_deg": angle,
        "contrast": bg - ink,
        "jpeg_quality": quality,
        "lines": [{"text": t} for t in lines],
    }
    return buf.getvalue(), meta


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=None, help="documents (default 60, hard set 24)")
    ap.add_argument("--seed", type=int, default=None, help=f"default 6, hard set {HARD_SEED}")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--hard", action="store_true", help="the harder second set (golden/hard)")
    args = ap.parse_args(argv)
    out = args.out or (HARD_DIR if args.hard else HERE)
    seed = args.seed if args.seed is not None else (HARD_SEED if args.hard else 6)
    count = args.count or (24 if args.hard else 60)
    (out / "images").mkdir(parents=True, exist_ok=True)
    manifest: dict = {"seed": seed, "generator": "reference_service/golden/generate.py", "documents": {}}
    for i in range(count):
        if args.hard:
            data, meta = render_hard(i, seed)
            name = f"images/hard_{i:03d}.jpg"
            (out / name).write_bytes(data)
        else:
            img, meta = render(i, seed)
            name = f"images/doc_{i:03d}.png"
            img.save(out / name, optimize=True)
        manifest["documents"][name] = meta
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
