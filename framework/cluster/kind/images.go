package kind

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/distribution/reference"
	"sigs.k8s.io/kind/pkg/cluster/nodes"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// LoadImages copies images from the host's Docker into every node's containerd (`docker save` streamed
// into `ctr images import`, as `kind load docker-image` does), skipping those a node already has with the
// same ID. Build them first, e.g. with scripts/kind/build-image.sh NAME:TAG BINARY. Pods must not use
// the latest tag (or must set imagePullPolicy Never / IfNotPresent), since the kubelet cannot pull.
func (p *Provider) LoadImages(ctx context.Context, images ...string) error {
	if len(images) == 0 {
		return nil
	}
	return p.step("load images "+strings.Join(images, " "), func() error {
		for _, img := range images {
			if strings.HasSuffix(img, ":latest") || !strings.Contains(img[strings.LastIndex(img, "/")+1:], ":") {
				p.opts.log.Info("warning: image without a non-latest tag: pods using it will try to pull unless imagePullPolicy is Never", "image", img)
			}
		}
		ids, err := hostImageIDs(ctx, images)
		if err != nil {
			return err
		}
		nodes, err := p.kind.ListNodes(p.opts.name)
		if err != nil {
			return err
		}
		for _, node := range nodes {
			have, err := nodeImageIDs(node)
			if err != nil {
				p.opts.log.Info("warning: cannot list the node's images; loading them all", "node", node.String(), "error", err.Error())
			}
			var missing []string
			for _, img := range images {
				if !have.has(img, ids[img]) {
					missing = append(missing, img)
				}
			}
			if len(missing) == 0 {
				p.opts.log.V(1).Info("images already on node", "node", node.String())
				continue
			}
			if err := streamSave(ctx, missing, func(r io.Reader) error { return nodeutils.LoadImageArchive(node, r) }); err != nil {
				return fmt.Errorf("load %v into node %s: %w", missing, node.String(), err)
			}
		}
		return nil
	})
}

// hostImageIDs reads the IDs of images from the host's Docker with one `docker image inspect` (it was one
// per image, and then one crictl per image and node: ≈ 50 processes and several seconds of each run's
// set-up on a busy 2-core machine).
func hostImageIDs(ctx context.Context, images []string) (map[string]string, error) {
	out, err := dockerOutput(ctx, append([]string{"image", "inspect", "--format", "{{.Id}}"}, images...)...)
	if err != nil {
		// name the image that is missing: one inspect each
		for _, img := range images {
			if _, err := dockerOutput(ctx, "image", "inspect", "--format", "{{.Id}}", img); err != nil {
				return nil, fmt.Errorf("image %s is not in the host's Docker (build it, e.g. scripts/kind/build-image.sh): %w", img, err)
			}
		}
		return nil, err
	}
	lines := strings.Split(out, "\n")
	if len(lines) != len(images) {
		return nil, fmt.Errorf("docker image inspect %v: %d IDs for %d images: %q", images, len(lines), len(images), out)
	}
	ids := make(map[string]string, len(images))
	for i, img := range images {
		ids[img] = strings.TrimSpace(lines[i])
	}
	return ids, nil
}

// nodeImages are a node's images: their IDs by the tags the container runtime knows them by.
type nodeImages map[string]string

// nodeImageIDs lists a node's images with one `crictl images` (kind's nodeutils.ImageID asks once per
// image). The CRI names images by their normalized reference (docker.io/library/busybox:1.0).
func nodeImageIDs(node nodes.Node) (nodeImages, error) {
	var out bytes.Buffer
	if err := node.Command("crictl", "images", "--output", "json").SetStdout(&out).Run(); err != nil {
		return nil, fmt.Errorf("crictl images: %w", err)
	}
	return parseNodeImages(out.Bytes())
}

// parseNodeImages reads `crictl images --output json`.
func parseNodeImages(out []byte) (nodeImages, error) {
	var list struct {
		Images []struct {
			ID       string   `json:"id"`
			RepoTags []string `json:"repoTags"`
		} `json:"images"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("crictl images: %w", err)
	}
	have := nodeImages{}
	for _, img := range list.Images {
		for _, tag := range img.RepoTags {
			have[tag] = img.ID
		}
	}
	return have, nil
}

// has says whether the node has image under its name with this ID.
func (n nodeImages) has(image, id string) bool {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return false
	}
	got, ok := n[reference.TagNameOnly(named).String()]
	return ok && got == id
}

// streamSave runs `docker save images...` and hands its output to load, without a temporary file.
func streamSave(ctx context.Context, images []string, load func(io.Reader) error) error {
	pr, pw := io.Pipe()
	cmd := exec.CommandContext(ctx, "docker", append([]string{"save"}, images...)...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = pw, &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	saveErr := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("docker save: %w: %s", err, strings.TrimSpace(stderr.String()))
		}
		pw.CloseWithError(err)
		saveErr <- err
	}()
	loadErr := load(pr)
	_ = pr.CloseWithError(errors.New("load ended"))
	return errors.Join(loadErr, <-saveErr)
}

func dockerOutput(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, intervals.Get(intervals.DockerCommand))
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// wrapperRuntime is the runtime scripts/kind/docker.sh registers when the kernel withholds
// CAP_SYS_RESOURCE (without it, `docker run --privileged`, which kind needs, fails in runc).
const wrapperRuntime = "cleanup-e2e-runc"

// checkDocker fails early, naming the fix, when Docker cannot run kind's nodes.
func checkDocker(ctx context.Context) error {
	runtime, err := dockerOutput(ctx, "info", "--format", "{{.DefaultRuntime}}")
	if err != nil {
		return fmt.Errorf("no usable Docker engine (run scripts/kind/docker.sh): %w", err)
	}
	if sysResourceMissing() && runtime != wrapperRuntime {
		return fmt.Errorf("this kernel withholds CAP_SYS_RESOURCE, so `docker run --privileged` fails with Docker's default runtime %q; "+
			"restart dockerd with scripts/kind/docker.sh (it registers the %s runtime)", runtime, wrapperRuntime)
	}
	return nil
}

func sysResourceMissing() bool {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			bnd, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && bnd&(1<<24) == 0
		}
	}
	return false
}
