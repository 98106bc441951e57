; f32 matmul, the single-thread throughput benchmark (bench/cpu_bench.py).
(module matmul
  (func matmul (dims M K N)
    (params (a (tensor f32 (M K) host)) (b (tensor f32 (K N) host)))
    (returns (tensor f32 (M N) host))
    (return (matmul a b))))
