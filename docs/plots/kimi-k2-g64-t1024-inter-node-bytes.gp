# Written by moecomm-bench; data in kimi-k2-g64-t1024-inter-node-bytes.dat
set terminal pngcairo size 1500,520 noenhanced font "sans,10"
set output 'kimi-k2-g64-t1024-inter-node-bytes.png'
set multiplot layout 1,3 title 'Kimi-K2: exact inter-node bytes of dispatch + combine vs ranks (64 ranks per node, 1024 tokens per rank)'
set logscale x 2
set logscale y 10
set format y "%g"
set xlabel "ranks"
set grid
set key top left
set ylabel 'inter-node GB (exact count)'
set title 'uniform'
plot 'kimi-k2-g64-t1024-inter-node-bytes.dat' index 0 using 1:2 with linespoints lc rgb '#d62728' dt 1 pt 7 ps 0.6 lw 1.5 title 'per_expert bf16', \
     'kimi-k2-g64-t1024-inter-node-bytes.dat' index 1 using 1:2 with linespoints lc rgb '#2ca02c' dt 1 pt 7 ps 0.6 lw 1.5 title 'flat bf16', \
     'kimi-k2-g64-t1024-inter-node-bytes.dat' index 2 using 1:2 with linespoints lc rgb '#1f77b4' dt 1 pt 7 ps 0.6 lw 1.5 title 'hierarchical bf16', \
     'kimi-k2-g64-t1024-inter-node-bytes.dat' index 3 using 1:2 with linespoints lc rgb '#d62728' dt 2 pt 7 ps 0.6 lw 1.5 title 'per_expert fp8', \
     'kimi-k2-g64-t1024-inter-node-bytes.dat' index 4 using 1:2 with linespoints lc rgb '#2ca02c' dt 2 pt 7 ps 0.6 lw 1.5 title 'flat fp8', \
     'kimi-k2-g64-t1024-inter-node-bytes.dat' index 5 using 1:2 with linespoints lc rgb '#1f77b4' dt 2 pt 7 ps 0.6 lw 1.5 title 'hierarchical fp8'
set title 'node-limited:4'
plot 'kimi-k2-g64-t1024-inter-node-bytes.dat' index 6 using 1:2 with linespoints lc rgb '#d62728' dt 1 pt 7 ps 0.6 lw 1.5 title 'per_expert bf16', \
     'kimi-k2-g64-t1024-inter-node-bytes.dat' index 7 using 1:2 with linespoints lc rgb '#2ca02c' dt 1 pt 7 ps 0.6 lw 1.5 title 'flat bf16', \
     'kimi-k2-g64-t1024-inter-node-bytes.dat' index 8 using 1:2 with linespoints lc rgb '#1f77b4' dt 1 pt 7 ps 0.6 lw 1.5 title 'hierarchical bf16', \
     'kimi-k2-g64-t1024-inter-node-bytes.dat' index 9 using 1:2 with linespoints lc rgb '#d62728' dt 2 pt 7 ps 0.6 lw 1.5 title 'per_expert fp8', \
     'kimi-k2-g64-t1024-inter-node-bytes.dat' index 10 using 1:2 with linespoints lc rgb '#2ca02c' dt 2 pt 7 ps 0.6 lw 1.5 title 'flat fp8', \
     'kimi-k2-g64-t1024-inter-node-bytes.dat' index 11 using 1:2 with linespoints lc rgb '#1f77b4' dt 2 pt 7 ps 0.6 lw 1.5 title 'hierarchical fp8'
set title 'trace:olmoe-1b-7b:github:15'
plot 'kimi-k2-g64-t1024-inter-node-bytes.dat' index 12 using 1:2 with linespoints lc rgb '#d62728' dt 1 pt 7 ps 0.6 lw 1.5 title 'per_expert bf16', \
     'kimi-k2-g64-t1024-inter-node-bytes.dat' index 13 using 1:2 with linespoints lc rgb '#2ca02c' dt 1 pt 7 ps 0.6 lw 1.5 title 'flat bf16', \
     'kimi-k2-g64-t1024-inter-node-bytes.dat' index 14 using 1:2 with linespoints lc rgb '#1f77b4' dt 1 pt 7 ps 0.6 lw 1.5 title 'hierarchical bf16', \
     'kimi-k2-g64-t1024-inter-node-bytes.dat' index 15 using 1:2 with linespoints lc rgb '#d62728' dt 2 pt 7 ps 0.6 lw 1.5 title 'per_expert fp8', \
     'kimi-k2-g64-t1024-inter-node-bytes.dat' index 16 using 1:2 with linespoints lc rgb '#2ca02c' dt 2 pt 7 ps 0.6 lw 1.5 title 'flat fp8', \
     'kimi-k2-g64-t1024-inter-node-bytes.dat' index 17 using 1:2 with linespoints lc rgb '#1f77b4' dt 2 pt 7 ps 0.6 lw 1.5 title 'hierarchical fp8'
unset multiplot
