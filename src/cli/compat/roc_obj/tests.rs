use super::perl::*;

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[test]
fn getopts_reads_as_getopt_std() {
    let (opts, rest) = getopts("vho:", &strings(&["-vo", "dir", "-x", "--", "-v"]));
    assert_eq!(opts, [('v', None), ('o', Some("dir".to_string()))]);
    assert_eq!(rest, ["-v"]);
    let (opts, rest) = getopts("vhd", &strings(&["-v", "-", "a"]));
    assert_eq!(opts, [('v', None)]);
    assert_eq!(rest, ["-", "a"]);
    let (opts, _) = getopts("vho:", &strings(&["-odir"]));
    assert_eq!(opts, [('o', Some("dir".to_string()))]);
    // What follows a letter reads as an argument of its own: `--` ends
    // the options, `--help` is passed over.
    let (opts, rest) = getopts("vhd", &strings(&["-v-", "x"]));
    assert_eq!((opts, rest), (vec![('v', None)], strings(&["x"])));
    let (opts, rest) = getopts("vhd", &strings(&["-d-help", "-v", "y"]));
    assert_eq!(opts, [('d', None), ('v', None)]);
    assert_eq!(rest, ["y"]);
    let (opts, rest) = getopts("vho:", &strings(&["-o"]));
    assert_eq!((opts, rest), (vec![('o', None)], vec![]));
}
