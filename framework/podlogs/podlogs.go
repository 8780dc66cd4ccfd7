// Package podlogs follows the logs of the pods in a namespace into files while a spec runs. A pod's log
// goes with the pod, and an uninstall deletes the operator's pods, often while the operator is still
// saying why it cannot finish a custom resource: following the log from the start keeps those last
// words for the verdict (olmv1.OperatorLog) and for the spec's artifacts.
//
// Each container start is followed once (GetLogs with Follow, which ends when the container does): a
// restarted container is followed again, appending to the same file. A stream that could not start
// is tried again at the pod watch's next resync.
package podlogs

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Follower follows the logs of one namespace's pods. Start it with Follow; Text reads what it kept.
type Follower struct {
	cs        kubernetes.Interface
	namespace string
	dir       string
	cancel    context.CancelFunc
	ctx       context.Context

	mu       sync.Mutex
	streams  map[string]chan struct{} // pod/container/restart count → closed when its stream ended
	failed   map[string]string        // same keys → why its stream could not start (retried)
	deleted  map[string]bool          // pods seen deleted
	running  sync.WaitGroup
	watching chan struct{}
}

// resync is how often the pod watch replays every pod: a stream that could not start is tried again.
const resync = 5 * time.Second

// Follow starts following every container of every pod in namespace, now and later, writing each
// container's log to dir/<pod>_<container>.log. It stops when ctx ends or at Stop.
func Follow(ctx context.Context, cs kubernetes.Interface, namespace, dir string) (*Follower, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pod logs of namespace %s: %w", namespace, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &Follower{cs: cs, namespace: namespace, dir: dir, cancel: cancel, ctx: ctx,
		streams: map[string]chan struct{}{}, failed: map[string]string{}, deleted: map[string]bool{}, watching: make(chan struct{})}
	pods := cs.CoreV1().Pods(namespace)
	lw := &cache.ListWatch{
		ListWithContextFunc:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return pods.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return pods.Watch(ctx, o) },
	}
	// The wrapper falls back to a plain list where cs cannot stream the initial list (a fake clientset).
	informer := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, cs), &corev1.Pod{}, resync, cache.Indexers{})
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { f.seen(o) },
		UpdateFunc: func(_, o any) { f.seen(o) },
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if p, ok := o.(*corev1.Pod); ok {
				f.mu.Lock()
				f.deleted[p.Name] = true
				f.mu.Unlock()
			}
		},
	}); err != nil {
		cancel()
		return nil, err
	}
	go func() {
		defer close(f.watching)
		informer.Run(ctx.Done())
	}()
	return f, nil
}

// seen starts following each container of pod that runs or ran, once per start.
func (f *Follower) seen(o any) {
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	for _, st := range append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...) {
		if st.State.Running == nil && st.State.Terminated == nil {
			continue // not started: no log yet
		}
		key := fmt.Sprintf("%s/%s/%d", pod.Name, st.Name, st.RestartCount)
		f.mu.Lock()
		if _, ok := f.streams[key]; ok || f.ctx.Err() != nil {
			f.mu.Unlock()
			continue
		}
		done := make(chan struct{})
		f.streams[key] = done
		f.running.Add(1)
		f.mu.Unlock()
		go f.stream(pod.Name, st.Name, key, done)
	}
}

// stream copies one container start's log into its file, until the container (or the Follower) ends.
func (f *Follower) stream(pod, container, key string, done chan struct{}) {
	defer f.running.Done()
	defer close(done)
	rc, err := f.cs.CoreV1().Pods(f.namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, Follow: true}).Stream(f.ctx)
	f.mu.Lock()
	if err != nil {
		f.failed[key] = fmt.Sprintf("could not follow the log of pod %s/%s container %s: %v", f.namespace, pod, container, err)
		delete(f.streams, key) // tried again at the next resync
	} else {
		delete(f.failed, key)
	}
	f.mu.Unlock()
	if err != nil {
		return
	}
	defer rc.Close()
	out, err := os.OpenFile(filepath.Join(f.dir, pod+"_"+container+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		f.mu.Lock()
		f.failed[key] = err.Error()
		f.mu.Unlock()
		return
	}
	defer out.Close()
	_, _ = io.Copy(out, rc) // ends with the container, or at Stop
}

// Text is everything the Follower kept, file by file, once each stream of a pod seen deleted has
// ended (waiting at most wait): an uninstalled operator's last lines are in. A line per stream that
// could not start follows.
func (f *Follower) Text(wait time.Duration) string {
	f.mu.Lock()
	var pending []chan struct{}
	for key, done := range f.streams {
		if f.deleted[strings.SplitN(key, "/", 2)[0]] {
			pending = append(pending, done)
		}
	}
	var notes []string
	for _, why := range f.failed {
		notes = append(notes, why)
	}
	f.mu.Unlock()
	deadline := time.After(wait)
wait:
	for _, done := range pending {
		select {
		case <-done:
		case <-deadline:
			notes = append(notes, fmt.Sprintf("the log of a pod deleted in %s was still streaming after %s: its end may be missing", f.namespace, wait))
			break wait
		}
	}
	files, _ := filepath.Glob(filepath.Join(f.dir, "*.log"))
	var b strings.Builder
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			notes = append(notes, err.Error())
			continue
		}
		b.Write(data)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	slices.Sort(notes)
	for _, n := range notes {
		b.WriteString(n + "\n")
	}
	return b.String()
}

// Stop ends every stream and the pod watch, and returns once they ended.
func (f *Follower) Stop() {
	f.cancel()
	<-f.watching
	f.running.Wait()
}
