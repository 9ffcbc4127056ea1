package council

import "github.com/adaptio/adaptio/bandit"

func banditEps(eps float64) bandit.Options { return bandit.Options{Epsilon: eps} }
