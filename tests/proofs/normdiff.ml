(* Reads lines "E1<TAB>E2" (dimension expressions in shapeml syntax) and
   prints 1 when the Coq normalizer gives them equal normal forms, else 0. *)
type sexp = Atom of string | List of sexp list

let tokenize s =
  let b = Buffer.create 16 and toks = ref [] in
  let flush () = if Buffer.length b > 0 then (toks := Buffer.contents b :: !toks; Buffer.clear b) in
  String.iter (fun c -> match c with
    | '(' | ')' -> flush (); toks := String.make 1 c :: !toks
    | ' ' | '\t' | '\n' -> flush ()
    | c -> Buffer.add_char b c) s;
  flush (); List.rev !toks

let parse toks =
  let rec one = function
    | "(" :: rest -> let items, rest = many rest in List items, rest
    | t :: rest -> Atom t, rest
    | [] -> failwith "unexpected end"
  and many = function
    | ")" :: rest -> [], rest
    | toks -> let x, rest = one toks in let xs, rest = many rest in x :: xs, rest
  in fst (one toks)

open Normx


let rec pos_of_int n =
  if n = 1 then XH else if n land 1 = 0 then XO (pos_of_int (n lsr 1)) else XI (pos_of_int (n lsr 1))
let z_of_int n = if n = 0 then Z0 else if n > 0 then Zpos (pos_of_int n) else Zneg (pos_of_int (-n))
let cb x = if x then True else False
let ascii_of_char c =
  let n = Char.code c in
  let bit k = cb (n land (1 lsl k) <> 0) in
  Ascii (bit 0, bit 1, bit 2, bit 3, bit 4, bit 5, bit 6, bit 7)
let coq_string s =
  let r = ref EmptyString in
  for i = String.length s - 1 downto 0 do r := String (ascii_of_char s.[i], !r) done;
  !r

let rec dim_of = function
  | Atom a -> (match int_of_string_opt a with Some n -> DLit (z_of_int n) | None -> DVar (coq_string a))
  | List (Atom "+" :: x :: xs) -> List.fold_left (fun acc y -> DAdd (acc, dim_of y)) (dim_of x) xs
  | List (Atom "*" :: x :: xs) -> List.fold_left (fun acc y -> DMul (acc, dim_of y)) (dim_of x) xs
  | List [Atom "-"; x; y] -> DSub (dim_of x, dim_of y)
  | List [Atom "floordiv"; x; Atom c] -> DFloorDiv (dim_of x, pos_of_int (int_of_string c))
  | List [Atom "mod"; x; Atom c] -> DMod (dim_of x, pos_of_int (int_of_string c))
  | _ -> failwith "bad dimension"

let () =
  try while true do
    let line = input_line stdin in
    match String.split_on_char '\t' line with
    | [a; b] ->
        let r = norm_eqb (dim_of (parse (tokenize a))) (dim_of (parse (tokenize b))) in
        print_endline (match r with True -> "1" | False -> "0")
    | _ -> failwith ("bad line: " ^ line)
  done with End_of_file -> ()
