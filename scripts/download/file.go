package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// file writes url's content to out when its SHA-256 is the one url+".sha256" publishes.
func file(ctx context.Context, url, out string) error {
	sum, err := get(ctx, url+".sha256")
	if err != nil {
		return fmt.Errorf("%s: its checksum: %w", url, err)
	}
	want := strings.Fields(string(sum))
	if len(want) == 0 || len(want[0]) != sha256.Size*2 {
		return fmt.Errorf("%s.sha256 does not hold a hex SHA-256 (it holds %q)", url, strings.TrimSpace(string(sum)))
	}
	body, err := open(ctx, url)
	if err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	defer func() { _ = body.Close() }()
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // gone once renamed
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), body); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("%s: %w", url, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, want[0]) {
		return fmt.Errorf("%s: SHA-256 %s, but %s.sha256 says %s: not written", url, got, url, want[0])
	}
	if err := os.Chmod(tmp.Name(), 0o755); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}

// get returns a small response body whole.
func get(ctx context.Context, url string) ([]byte, error) {
	body, err := open(ctx, url)
	if err != nil {
		return nil, err
	}
	defer func() { _ = body.Close() }()
	return io.ReadAll(io.LimitReader(body, 1<<20))
}

// client is the file downloads' (the transport in main.go).
var client = &http.Client{Transport: transport}

// open starts a GET that answered 200 (redirects followed, as dl.k8s.io's to its CDN).
func open(ctx context.Context, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("GET answered %s", resp.Status)
	}
	return resp.Body, nil
}
