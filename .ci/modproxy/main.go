// Command modproxy writes a file-system Go module proxy (GOPROXY=file:///...)
// holding the modules of a Git repository at some of its tags, so that a
// release can be installed by version before anything is pushed.
//
// Usage:
//
//	modproxy -repo DIR -out DIR TAG...
//
// Each TAG is a release tag of the repository: "vX.Y.Z" for the module at
// the repository root, "sub/dir/vX.Y.Z" for the module in sub/dir, as the go
// command expects them. For each, modproxy reads sub/dir/go.mod at the tag
// for the module path and writes, under DIR, the files the go command asks a
// proxy for:
//
//	<escaped module path>/@v/list
//	<escaped module path>/@v/vX.Y.Z.info
//	<escaped module path>/@v/vX.Y.Z.mod
//	<escaped module path>/@v/vX.Y.Z.zip
//
// The zip is made by golang.org/x/mod/zip.CreateFromVCS from "git archive" of
// the tag, exactly as the go command makes it from a repository: files of
// nested modules are left out, and a module without a LICENSE gets the
// repository root's. It prints each module's version and zip hash (the h1:
// line a user's go.sum will hold).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

func main() {
	repo := flag.String("repo", ".", "the Git repository's work tree")
	out := flag.String("out", "", "the proxy's root directory (created if need be)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: modproxy -repo DIR -out DIR TAG...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	root, err := filepath.Abs(*repo)
	if err != nil {
		fatal(err)
	}
	for _, tag := range flag.Args() {
		if err := publish(root, *out, tag); err != nil {
			fatal(fmt.Errorf("tag %s: %w", tag, err))
		}
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "modproxy:", err)
	os.Exit(1)
}

// publish writes the proxy files of the module tagged tag in repo under out.
func publish(repo, out, tag string) error {
	subdir, version := path.Split(tag)
	subdir = strings.TrimSuffix(subdir, "/")
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return fmt.Errorf("%q is not a canonical semantic version", version)
	}
	commit, err := git(repo, "rev-parse", "--verify", "--quiet", tag+"^{commit}")
	if err != nil {
		return fmt.Errorf("no such tag: %w", err)
	}
	commit = strings.TrimSpace(commit)

	gomodPath := "go.mod"
	if subdir != "" {
		gomodPath = subdir + "/go.mod"
	}
	gomod, err := git(repo, "show", commit+":"+gomodPath)
	if err != nil {
		return fmt.Errorf("reading %s: %w", gomodPath, err)
	}
	modPath := modfile.ModulePath([]byte(gomod))
	if modPath == "" {
		return fmt.Errorf("%s has no module line", gomodPath)
	}
	if err := module.Check(modPath, version); err != nil {
		return err
	}
	// The go command finds the module in sub/dir only if its path, less any
	// /vN suffix, ends in sub/dir.
	if prefix, _, _ := module.SplitPathVersion(modPath); subdir != "" && !strings.HasSuffix(prefix, "/"+subdir) {
		return fmt.Errorf("module %s in directory %s: the go command would not find it by this tag", modPath, subdir)
	}

	escaped, err := module.EscapePath(modPath)
	if err != nil {
		return err
	}
	dir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	m := module.Version{Path: modPath, Version: version}

	zipFile := filepath.Join(dir, version+".zip")
	if err := writeZip(zipFile, m, repo, commit, subdir); err != nil {
		return err
	}
	if _, err := zip.CheckZip(m, zipFile); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, version+".mod"), []byte(gomod), 0o644); err != nil {
		return err
	}

	unix, err := git(repo, "log", "-1", "--format=%ct", commit)
	if err != nil {
		return err
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(unix), 10, 64)
	if err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Unix(secs, 0).UTC()})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, version+".info"), append(info, '\n'), 0o644); err != nil {
		return err
	}
	if err := addToList(filepath.Join(dir, "list"), version); err != nil {
		return err
	}

	sum, err := dirhash.HashZip(zipFile, dirhash.Hash1)
	if err != nil {
		return err
	}
	fmt.Printf("%s %s %s\n", modPath, version, sum)
	return nil
}

func writeZip(name string, m module.Version, repo, commit, subdir string) (err error) {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	return zip.CreateFromVCS(f, m, repo, commit, subdir)
}

// addToList adds version to the proxy's list file, one version a line,
// in semantic version order.
func addToList(name, version string) error {
	data, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	versions := []string{version}
	for _, v := range strings.Fields(string(data)) {
		if v != version {
			versions = append(versions, v)
		}
	}
	sort.Slice(versions, func(i, j int) bool { return semver.Compare(versions[i], versions[j]) < 0 })
	return os.WriteFile(name, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
