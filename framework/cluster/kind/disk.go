package kind

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// minFreeForCluster is what a new cluster needs in Docker's data root: its node's /var volume holds a
// copy of every image loaded into it (≈ 0.8 GB with the test images) and the pods' logs.
const minFreeForCluster = 2 << 30

// checkDiskSpace fails before a cluster is created when Docker's data root has less than need bytes
// free, naming the directory and the numbers. A node created on a nearly full disk would instead
// report DiskPressure and have its pods evicted, far from the cause. Skipped when the data root is not
// on this machine (DOCKER_HOST pointing elsewhere).
func checkDiskSpace(ctx context.Context, need uint64) error {
	root, err := dockerOutput(ctx, "info", "--format", "{{.DockerRootDir}}")
	if err != nil || root == "" {
		return nil // checkDocker already said what is wrong with Docker
	}
	if _, err := os.Stat(root); err != nil {
		return nil
	}
	return needFree(root, need, "a new kind cluster (its node's volume holds a copy of every loaded image)")
}

// needFree returns an error naming dir, what needs the space and the numbers when dir's filesystem
// has less than need bytes available.
func needFree(dir string, need uint64, what string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("check free space on %s: %w", dir, err)
	}
	avail := st.Bavail * uint64(st.Bsize)
	if avail >= need {
		return nil
	}
	return fmt.Errorf("not enough disk space for %s: %.1f GiB free on the filesystem of %s, need %.1f GiB; "+
		"free some (scripts/kind/prune.sh removes superseded cleanup-e2e images, `kind get clusters` lists clusters "+
		"to delete) and retry — nothing was created", what, gib(avail), dir, gib(need))
}

func gib(b uint64) float64 { return float64(b) / (1 << 30) }
