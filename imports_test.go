//go:build go1.24

package statsblob

import (
	"bufio"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const modulePath = "github.com/statsblob/statsblob"

// packageMap returns the package map of doc.go: the module's packages in
// order, from the floor up.
func packageMap(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var order []string
	in := false
	for s := bufio.NewScanner(f); s.Scan(); {
		line := s.Text()
		switch {
		case line == "// # Package map":
			in = true
		case in && strings.HasPrefix(line, "//\t"):
			order = append(order, strings.Fields(line[3:])[0])
		case in && len(order) > 0 && !strings.HasPrefix(line, "//\t"):
			return order
		}
	}
	t.Fatal("doc.go has no package map")
	return nil
}

// readmeMap returns the packages of README.md's "Package map" section in
// order: the first `path` of each table row.
func readmeMap(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Package map\n")
	if !ok {
		t.Fatal("README.md has no Package map section")
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	row := regexp.MustCompile("^\\| `([^`]+)` \\|")
	var order []string
	for line := range strings.SplitSeq(sec, "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			order = append(order, m[1])
		}
	}
	return order
}

// modulePackages returns the directories (relative, slash-separated) of
// the module's packages and their imports within the module; nested
// modules and testdata are skipped, test files are not read.
func modulePackages(t *testing.T) map[string][]string {
	t.Helper()
	pkgs := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if path != "." {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module
			}
		}
		p, err := build.ImportDir(path, 0)
		if _, none := err.(*build.NoGoError); none {
			return nil
		}
		if err != nil {
			return err
		}
		var imps []string
		for _, imp := range p.Imports {
			if rel, ok := strings.CutPrefix(imp, modulePath+"/"); ok {
				imps = append(imps, rel)
			}
		}
		if path != "." {
			pkgs[filepath.ToSlash(path)] = imps
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// TestImportsPointDown: every package of the module is in the package map,
// and every package it depends on, directly or not (what go list -deps
// lists), comes before it. README.md's map is doc.go's.
func TestImportsPointDown(t *testing.T) {
	order := packageMap(t)
	if readme := readmeMap(t); !slices.Equal(readme, order) {
		t.Errorf("README.md's package map\n\t%v\ndiffers from doc.go's\n\t%v", readme, order)
	}
	level := map[string]int{}
	for i, p := range order {
		if _, dup := level[p]; dup {
			t.Errorf("package map: %s listed twice", p)
		}
		level[p] = i
	}
	pkgs := modulePackages(t)
	for p := range pkgs {
		if _, ok := level[p]; !ok {
			t.Errorf("package %s is not in the package map (doc.go and README.md): add it above every package it imports", p)
		}
	}
	for _, p := range order {
		if _, ok := pkgs[p]; !ok {
			t.Errorf("package map lists %s, which is not a package of this module", p)
		}
	}
	// deps is what go list -deps gives, restricted to the module.
	var deps func(p string, seen map[string]bool)
	deps = func(p string, seen map[string]bool) {
		for _, d := range pkgs[p] {
			if !seen[d] {
				seen[d] = true
				deps(d, seen)
			}
		}
	}
	for _, p := range order {
		seen := map[string]bool{}
		deps(p, seen)
		for d := range seen {
			if level[d] >= level[p] {
				t.Errorf("%s depends on %s, which the package map puts above it", p, d)
			}
		}
	}
}
