"""Inputs for ddddocr_det (ddddocr 1.6.1, ddddocr/common_det.onnx: the YOLOX detector behind
``DdddOcr(det=True).detection``).

A click-captcha as the detector is meant for: build_inputs.py's photo.png with four large
characters drawn on it (DejaVu fonts), PNG-encoded; then the package's own
``DetectionEngine.preproc`` (imported bare from the unpacked wheel, unmodified) on the path
``get_bbox`` takes: ``cv2.imdecode`` (BGR), letterbox to 416x416 padded with 114, CHW,
float32 0..255, batch 1. Run from /work/models after build_inputs.py.
"""
import glob
import io
import os
import sys
import types

import numpy as np
from PIL import Image, ImageDraw

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_inputs import ROOT, X, font, save  # noqa: E402


def bare(name, path):
    m = types.ModuleType(name)
    m.__path__ = [path]
    sys.modules[name] = m


def captcha() -> bytes:
    img = Image.open(os.path.join(ROOT, "photo.png")).convert("RGB").resize((344, 344))
    draw = ImageDraw.Draw(img)
    for (x, y), ch, size in (((30, 40), "A", 64), ((200, 60), "Q", 56), ((90, 210), "7", 60),
                             ((240, 230), "K", 52)):
        draw.text((x, y), ch, fill=(20, 20, 20), font=font("DejaVuSans-Bold.ttf", size),
                  stroke_width=3, stroke_fill=(250, 250, 250))
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


def main():
    import cv2

    d = glob.glob(os.path.join(X, "ddddocr-*", "ddddocr"))[0]
    for name, sub in (("ddddocr", ""), ("ddddocr.core", "core"), ("ddddocr.utils", "utils")):
        bare(name, os.path.join(d, sub))
    from ddddocr.core.detection_engine import DetectionEngine

    data = captcha()
    with open(os.path.join(ROOT, "ddddocr_det", "captcha_click.png"), "wb") as f:
        f.write(data)
    img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)  # as get_bbox does
    im, ratio = DetectionEngine.preproc(None, img, (416, 416))
    save("ddddocr_det", {"images": im[None]},
         {"source": "ddddocr 1.6.1 core.detection_engine.DetectionEngine.preproc on a 344x344 "
                    "click-captcha (photo.png + 4 drawn characters), as get_bbox does",
          "ratio": ratio})

    if "--sanity" in sys.argv:
        import onnxruntime as ort
        s = ort.InferenceSession(os.path.join(ROOT, "ddddocr_det", "model.onnx"),
                                 providers=["CPUExecutionProvider"])
        out = s.run(None, {s.get_inputs()[0].name: im[None]})
        pred = DetectionEngine.demo_postprocess(None, out[0].copy(), (416, 416))[0]
        scores = pred[:, 4] * pred[:, 5:].max(1)
        print("outputs", [o.shape for o in out], "top scores", np.round(np.sort(scores)[-6:], 3))


if __name__ == "__main__":
    main()
