package backendtest

import "os"

func writeFile(name string, data []byte) error { return os.WriteFile(name, data, 0o644) }
func readFile(name string) ([]byte, error)     { return os.ReadFile(name) }
func dirLen(name string) (int, error) {
	ents, err := os.ReadDir(name)
	return len(ents), err
}
