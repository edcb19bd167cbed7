"""What hydro's commands and experiments are built from: ``hydro run``, sweeps, closed forms,
plots and the runnable examples."""
