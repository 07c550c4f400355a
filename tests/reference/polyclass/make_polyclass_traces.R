# R references for the polyclass port (pipeline/utility/polyclass.py): polspline's polyclass
# as synthpop 1.2-1's utility.synds calls it (penalty = 0), with its console trace.
#
# Run from this folder with R 4.2.2 + polspline 1.1.22:  Rscript make_polyclass_traces.R
# Writes data/r*.csv (seeded random data sets, then read back: the fits use the CSV values)
# and polyclass_traces.json.  data/us04_set*.csv are inputs: the covariates 1.2-1 passes to
# polyclass for US04 (original vs synthetic set k), written from the vendored US04 data by
# tests/utility/test_synds.py::_poly_covariates.
library(polspline)

lg <- function(eta) rbinom(length(eta), 1, 1 / (1 + exp(-eta)))
cases <- list(
  list(id = "r01", seed = 101, n = 300, what = "age-like integer, rounded normal, binary; logistic with a knot and an interaction",
       gen = function(n) { a <- sample(18:80, n, TRUE); z <- round(rnorm(n), 3); b <- rbinom(n, 1, .4)
         data.frame(t = lg(-0.3 + 0.05 * pmax(a - 40, 0) + 0.5 * z * b), a, z, b) }),
  list(id = "r02", seed = 102, n = 800, what = "balanced labels, six independent integer covariates (original vs synthetic style)",
       gen = function(n) data.frame(t = rep(0:1, each = n / 2), s = sample(1:2, n, TRUE), a = sample(16:90, n, TRUE),
         i = round(rlnorm(n, 7, 1)), d = sample(0:21, n, TRUE), e = sample(1:5, n, TRUE), m = sample(1:6, n, TRUE))),
  list(id = "r03", seed = 103, n = 1500, what = "three continuous covariates, smooth non-linear logit",
       gen = function(n) { u <- runif(n); v <- runif(n); w <- rexp(n); data.frame(t = lg(1.5 * sin(4 * u) + v * w - 1), u, v, w) }),
  list(id = "r04", seed = 104, n = 2500, what = "factor codes, skewed integer, binary, uniform",
       gen = function(n) { f <- sample(1:4, n, TRUE); e <- round(rexp(n) * 1000); b <- rbinom(n, 1, .5); u <- runif(n)
         data.frame(t = lg(0.2 * (f == 3) - 0.0003 * e + 0.4 * b * u), f, e, b, u) }),
  list(id = "r05", seed = 2, n = 3000, what = "five covariates; a failed refit after a degenerate addition, then deletion from the failed state",
       gen = function(n) { f <- sample(1:4, n, TRUE); e <- rexp(n) * 1000; b <- rbinom(n, 1, .5); u <- runif(n); w <- round(rnorm(n, 50, 10))
         data.frame(t = lg(0.2 * (f == 3) - 0.0003 * e + 0.4 * b * u), f, e, b, u, w) }),
  list(id = "r06", seed = 106, n = 300, what = "eight digit covariates, no signal",
       gen = function(n) { x <- matrix(sample(0:9, n * 8, TRUE), n); data.frame(t = rep(0:1, length.out = n), x) }),
  list(id = "r07", seed = 3, n = 500, what = "two normal covariates, strong signal",
       gen = function(n) { a <- rnorm(n); c <- rnorm(n); data.frame(t = lg(2.5 * a - 1.5 * pmax(c, 0)), a = a, c = c) }),
  list(id = "r08", seed = 1, n = 1000, what = "integer, normal and binary covariates; a long search (32 dimensions)",
       gen = function(n) { a <- sample(18:80, n, TRUE); z <- rnorm(n); b <- rbinom(n, 1, .4)
         data.frame(t = lg(-0.3 + 0.06 * pmax(a - 45, 0) + 0.5 * z * b), a = a, z = z, b = b) })
)
for (k in 1:5) cases[[length(cases) + 1]] <- list(id = sprintf("us04_set%d", k), what = sprintf("US04: original vs synthetic set %d", k))

num <- function(v) paste0("[", paste(ifelse(is.na(v), "null", sprintf("%.17g", v)), collapse = ", "), "]")
str <- function(v) paste0("[", paste0('"', gsub('"', '\\\\"', v), '"', collapse = ", "), "]")
out <- character()
for (cs in cases) {
  path <- sprintf("data/%s.csv", cs$id)
  if (!is.null(cs$gen)) {
    set.seed(cs$seed)
    write.csv(cs$gen(cs$n), path, row.names = FALSE)
  }
  d <- read.csv(path)
  t <- d[, 1]; x <- as.matrix(d[, -1])
  trace <- capture.output(fit <- polyclass(data = t, cov = x, penalty = 0, silent = FALSE))
  p <- ppolyclass(cov = x, fit = fit)[, 2]
  f <- fit$fcts
  kn <- matrix(fit$knots, nrow = ncol(x))
  out <- c(out, paste0(
    '{"case_id": "', cs$id, '", "description": "', cs$what, '", "data": "polyclass/', path, '", ',
    '"n": ', nrow(x), ', "ncov": ', ncol(x), ', "ndim": ', fit$ndim, ', "trace": ', str(trace), ', ',
    '"fcts": {"dim1": ', num(f[, 1]), ', "knot1": ', num(f[, 2]), ', "dim2": ', num(f[, 3]), ', "knot2": ', num(f[, 4]),
    ', "beta": ', num(f[, 5]), '}, "knots": [', paste(apply(kn, 1, num), collapse = ", "), '], ',
    '"prob_first20": ', num(p[1:20]), ', "prob_sum_sq_dev_0.5": ', sprintf("%.17g", sum((p - 0.5)^2)), '}'))
}
env <- sprintf('{"R": "%s", "polspline": "%s"}', R.version.string, packageVersion("polspline"))
writeLines(c('{"function": "polspline::polyclass(data = t, cov = x, penalty = 0, silent = FALSE); ppolyclass(cov = x, fit)[, 2]",',
             paste0(' "generator": "make_polyclass_traces.R", "environment": ', env, ','),
             ' "cases": [', paste(out, collapse = ",\n"), ']}'), "polyclass_traces.json")
