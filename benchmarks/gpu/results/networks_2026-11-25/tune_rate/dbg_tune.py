import sys, time, json, shutil, os
from tensorsched.tune.task import Task
from tensorsched.tune import tuner
def main():
  log_in = sys.argv[1]
  for shape in [(1, 64, 112, 112, 128, 3, 3, 1, 1), (1, 512, 14, 14, 512, 3, 3, 1, 1)]:
      for nb in (None, 4):
          task = Task("conv2d", "implicit_gemm", shape, "float32", ("bias", "relu"))
          log = os.path.join(os.environ["OUT"], f"dbg_{shape[1]}_{nb}.jsonl")
          shutil.copy(log_in, log)
          t0 = time.time()
          res = tuner.tune(task, log, strategy="model", time_s=15, n_build=nb, resume=True, progress=False)
          print(shape, "n_build", nb, "wall", round(time.time() - t0, 1), res.counts,
                {k: round(v, 2) for k, v in res.stats.items()}, flush=True)

if __name__ == "__main__":
    main()
