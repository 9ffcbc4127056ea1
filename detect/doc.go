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
// A Model is a fitted preprocessing (Yeo-Johnson with per-feature
// maximum-likelihood lambda, centring, scaling) plus one of three
// classifiers behind the Classifier interface, chosen by name:
//
//   - "tree": CART (Gini) with minimal cost-complexity pruning, its parameter
//     chosen by 5-fold cross-validation;
//   - "forest": a random forest of 500 unpruned CART trees on bootstrap
//     samples, mtry 3, at least 20 rows per leaf, grown on parallel goroutines with per-tree generators
//     derived from the caller's rng (results do not depend on scheduling);
//   - "mlp": the papers' network, 6 -> 5 ReLU -> 5 ReLU -> 3 softmax (the
//     papers' 5 inputs when trained on PaperFeatures: excluded features
//     enter as 0), RMSProp
//     (learning rate 0.001, rho 0.9), categorical cross-entropy, batch 32,
//     50 epochs.
//
// Evaluate computes the papers' metrics (confusion matrix, accuracy, Cohen's
// kappa, one-vs-rest sensitivity and specificity); CenterRows, Split and
// LoadSet sample a simulator dataset as the papers do (the same number of
// rows from the centre of each experiment, 70/30 stratified split);
// Synthetic builds a set from the workload patterns alone. Smoother is an
// optional per-node moving average of the probabilities of consecutive
// intervals.
//
// Trees split on raw feature values (a tree is invariant under the monotone
// preprocessing), so their predictions skip it; the network uses it.
// Training is deterministic given the rng; prediction is allocation-free.
// Models are saved as versioned JSON; Default returns an embedded tree
// trained on the simulator's dataset.
//
//	m, err := detect.Train("tree", train.X, train.Y, detect.TrainOptions{}, rand.New(rand.NewPCG(seed, 0)))
//	report := detect.Evaluate(m, test.X, test.Y) // confusion matrix, accuracy, kappa, ...
//	err = m.SaveFile("tree.json")
//	...
//	m, err = detect.LoadFile("tree.json") // or detect.Default()
//	class, probs := m.Detect(obs)        // per interval, at the Council
package detect
