// Package detect classifies an I/O node's access pattern from the metrics of
// one interval (access.Observation.Features: the papers' five, number of file
// handles; request size average, minimum and maximum; average offset distance
// between consecutive requests to the same file handle; and ours, the average
// offset distance between consecutive requests of the same process to the
// same file handle) into the papers' three classes: file per process (FPP),
// shared file contiguous (SC) and shared file 1D-strided (SS). The operation
// is not part of the class; callers pair the class with Observation.Op.
//
// The sixth feature is beyond the papers. In the simulator, processes of a
// strided run drift apart, so the per-file distance of shared-strided
// intervals overlaps that of shared-contiguous ones (the five features give
// about 98% accuracy); the per-process distance is the request size for
// contiguous access and processes x request size for 1D-strided access
// whatever the interleaving, and lifts every classifier to about 100%.
// TrainOptions.Features selects the features a model uses (PaperFeatures
// for the papers' five, for comparison); the model file records them.
//
// Package detect is inference only, what the Council links: a Model is a
// fitted preprocessing (Yeo-Johnson with per-feature lambda, centring,
// scaling) plus one of three classifiers behind the Classifier interface,
// decoded from a model file by kind:
//
//   - "tree": a CART decision tree (Tree);
//   - "forest": a random forest, the mean of its trees' leaf proportions
//     (Forest);
//   - "mlp": the papers' network, 6 -> 5 ReLU -> 5 ReLU -> 3 softmax (the
//     papers' 5 inputs when trained on PaperFeatures: excluded features
//     enter as 0) (MLP).
//
// It is pure: no files, goroutines or clocks; Load decodes a model from a
// reader, Default the embedded one. Package detect/learn trains the
// classifiers (CART with cost-complexity pruning, the forest on parallel
// goroutines, RMSProp for the network), evaluates them, builds the data
// sets and reads and writes model files; it assembles what it trains with
// NewTree, NewForest, NewMLP and NewModel. Smoother is an optional
// per-node moving average of the probabilities of consecutive intervals.
//
// Trees split on raw feature values (a tree is invariant under the monotone
// preprocessing), so their predictions skip it; the network uses it.
// Prediction is allocation-free. Models are saved as versioned JSON;
// Default returns an embedded tree trained on the simulator's dataset.
//
//	m, err := detect.Load(r)     // a model file (learn.LoadFile reads one from a path)
//	m = detect.Default()         // or the embedded model
//	class, probs := m.Detect(obs) // per interval, at the Council
package detect
