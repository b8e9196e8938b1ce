#!/usr/bin/python3
"""Compare dprec spectral topics with scikit-learn's LatentDirichletAllocation
on exactly the corpus dprec trained on (its vocabulary after pruning, the
selected documents with >= 3 kept tokens).

usage: lda_compare.py DOCWORD VOCAB MODEL.json [--select FILE:VALUE]
                      [--labels FILE] [--sklearn K] [--out RESULT.json]

MODEL.json is `dprec spectral --out MODEL.json` (it holds the vocabulary and
the topics). With --sklearn K it fits sklearn's LDA (batch variational Bayes,
defaults: doc_topic_prior = topic_word_prior = 1/K, max_iter 10,
random_state 0) single-threaded and reports its process CPU time. Both
models are scored by the same NPMI (top-10 words, document co-occurrence on
this corpus), effective number of topics (exp entropy of the token shares)
and NMI of the argmax topic against the labels (sklearn's
normalized_mutual_info_score, arithmetic mean)."""
import gzip, json, math, sys, time, os
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np
import scipy.sparse as sp

def arg(name, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default

docword, vocabf, modelf = sys.argv[1:4]
model = json.load(open(modelf))
mvocab = model["vocab"]
mid = {w: i for i, w in enumerate(mvocab)}
vocab = [l.strip() for l in open(vocabf)]
to = np.array([mid.get(w, -1) for w in vocab])
keep = None
sel = arg("--select")
if sel:
    f, v = sel.rsplit(":", 1)
    keep = [l.strip() == v for l in open(f)]
rows, cols, vals = [], [], []
with gzip.open(docword, "rt") as fh:
    D, W, NNZ = int(fh.readline()), int(fh.readline()), int(fh.readline())
    for line in fh:
        d, w, c = map(int, line.split())
        if keep is not None and not keep[d - 1]:
            continue
        j = to[w - 1]
        if j >= 0:
            rows.append(d - 1); cols.append(j); vals.append(c)
X = sp.csr_matrix((vals, (rows, cols)), shape=(D, len(mvocab)))
lens = np.asarray(X.sum(axis=1)).ravel()
docs = np.where(lens >= 3)[0]
X = X[docs]
print(f"corpus: {X.shape[0]} documents, {X.shape[1]} words, {int(X.sum())} tokens", file=sys.stderr)
B = (X > 0).astype(np.float64).tocsc()
N = X.shape[0]

def npmi(top):
    s, n = 0.0, 0
    for i in range(1, len(top)):
        for j in range(i):
            a, b = B[:, top[i]], B[:, top[j]]
            dab = a.multiply(b).sum()
            da, db = a.sum(), b.sum()
            if dab == 0:
                s += -1
            else:
                p = dab / N
                s += 1.0 if p == 1 else math.log(p / (da / N * db / N)) / -math.log(p)
            n += 1
    return s / n

def eff(w):
    w = np.asarray(w, float); w = w[w > 0] / w[w > 0].sum()
    return float(math.exp(-(w * np.log(w)).sum()))

out = {}
labels = arg("--labels")
lab = None
if labels:
    lab = np.array([l.strip() for l in open(labels)])[docs]
dt = [t for t in model["topics"] if not t.get("zero_weight")]
dtops = [[mid[x["word"]] for x in t["top_words"][:10]] for t in dt]
out["dprec"] = {"npmi": float(np.mean([npmi(t) for t in dtops])),
                "effective_topics": eff([t["weight"] for t in model["topics"]]),
                "top_words": [[mvocab[i] for i in t] for t in dtops],
                "weights": [t["weight"] for t in dt]}
K = arg("--sklearn")
if K:
    from sklearn.decomposition import LatentDirichletAllocation
    from sklearn.metrics import normalized_mutual_info_score
    K = int(K)
    t0 = time.process_time()
    lda = LatentDirichletAllocation(n_components=K, random_state=0, n_jobs=1)
    theta = lda.fit_transform(X)
    cpu = time.process_time() - t0
    tops = [list(np.argsort(-c)[:10]) for c in lda.components_]
    share = (theta * lens[docs][:, None]).sum(axis=0)
    order = np.argsort(-share)
    res = {"cpu_seconds": cpu, "npmi": float(np.mean([npmi(t) for t in tops])),
           "effective_topics": eff(share),
           "top_words": [[mvocab[i] for i in tops[k]] for k in order],
           "weights": [float(share[k] / share.sum()) for k in order]}
    if lab is not None:
        res["nmi"] = float(normalized_mutual_info_score(lab, theta.argmax(axis=1)))
    out["sklearn"] = res
json.dump(out, open(arg("--out", "/dev/stdout"), "w"), indent=1)
