; Comparisons on bool operands (spec §4.7): false < true.
(module m
  (func cmp (dims N)
    (params (a (tensor bool (N) host)) (b (tensor bool (N) host)))
    (returns (tensor bool (N) host) (tensor bool (N) host) (tensor bool (N) host)
             (tensor bool (N) host) (tensor bool (N) host) (tensor bool (N) host))
    (return (eq a b) (ne a b) (lt a b) (le a b) (gt a b) (ge a b))))
