// Package learn trains, evaluates and feeds package detect's classifiers:
// everything about detection that is not inference. It reads data sets
// (package dataset), runs training goroutines, measures wall time and reads
// and writes model files; the Council links package detect alone.
//
// Train fits the preprocessing (FitPreprocess: Yeo-Johnson with per-feature
// maximum-likelihood lambda, centring, scaling) and one classifier, chosen
// by name:
//
//   - "tree": CART (Gini) with minimal cost-complexity pruning, its parameter
//     chosen by 5-fold cross-validation;
//   - "forest": a random forest of 500 unpruned CART trees on bootstrap
//     samples, mtry 3, at least 20 rows per leaf, grown on parallel
//     goroutines with per-tree generators derived from the caller's rng
//     (results do not depend on scheduling);
//   - "mlp": the papers' network, 6 -> 5 ReLU -> 5 ReLU -> 3 softmax, RMSProp
//     (learning rate 0.001, rho 0.9), categorical cross-entropy, batch 32,
//     50 epochs.
//
// detect.TrainOptions tunes it; training is deterministic given the rng.
// Evaluate computes the papers' metrics (confusion matrix, accuracy,
// Cohen's kappa, one-vs-rest sensitivity and specificity); CenterRows, Split
// and LoadSet sample a simulator dataset as the papers do (the same number
// of rows from the centre of each experiment, 70/30 stratified split);
// Synthetic builds a set from the workload patterns alone. SaveFile and
// LoadFile write and read model files.
//
//	s, err := learn.LoadSet("synthetic", learn.SetOptions{PerExperiment: 40}, seed)
//	train, test, err := learn.Split(s, 0.7, rng)
//	m, err := learn.Train("tree", train.X, train.Y, detect.TrainOptions{}, rand.New(rand.NewPCG(seed, 0)))
//	report := learn.Evaluate(m, test.X, test.Y) // confusion matrix, accuracy, kappa, ...
//	err = learn.SaveFile(m, "tree.json")        // detect.Load or learn.LoadFile reads it back
package learn
