# sdcMicro's time on the data of bench_sdcrisk.py (issue 38), in an R environment with sdcMicro 5.8.0:
#   python benchmarks/bench_sdcrisk.py --rows 1000000 --export-csv register_1M.csv
#   Rscript benchmarks/sdcmicro_timing.R register_1M.csv
# Prints the elapsed and CPU seconds of measure_risk, ldiversity and suda2 (sdcMicro's suda2 has
# no missing-dimension option: it searches every MSU size).
library(sdcMicro)
args <- commandArgs(trailingOnly = TRUE)
df <- read.csv(args[1], stringsAsFactors = TRUE)
keys <- c("sex", "age", "municipality", "edu", "marital", "employment", "hhsize", "tenure")
cat(R.version.string, "sdcMicro", as.character(packageVersion("sdcMicro")), nrow(df), "records\n")
print(system.time(measure_risk(df, keyVars = keys)))
print(system.time(ldiversity(df, keyVars = keys, ldiv_index = "health")))
print(system.time(suda2(df, variables = keys)))
