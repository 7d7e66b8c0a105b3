use super::*;

fn min(s: &str) -> String {
    minify(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

#[test]
fn comments_go_and_line_breaks_stay_one() {
    let src = "// head\nimport { a } from './a.js';\n\n/** doc\n * more */\nexport function f(x) {\n  return x + 1; // why\n}\n";
    assert_eq!(
        min(src),
        "import{a}from'./a.js';\nexport function f(x){\nreturn x+1;\n}\n"
    );
}

#[test]
fn automatic_semicolons_read_the_same() {
    // No semicolons: the line breaks are the statements' ends, also across a comment.
    assert_eq!(min("let a = 1\nlet b = a\n(b)"), "let a=1\nlet b=a\n(b)");
    assert_eq!(min("a = 1/*\n*/b = 2"), "a=1\nb=2");
    assert_eq!(min("return\n  x"), "return\nx");
}

#[test]
fn tokens_that_would_fuse_keep_a_space() {
    assert_eq!(min("a - -b + +c"), "a- -b+ +c");
    assert_eq!(min("x = 1 .toString()"), "x=1 .toString()");
    assert_eq!(min("const { a } = b"), "const{a}=b");
    assert_eq!(min("typeof x === 'y'"), "typeof x==='y'");
    assert_eq!(min("a ? .5 : 1"), "a?.5:1");
    assert_eq!(min("this.#n += 1"), "this.#n+=1");
}

#[test]
fn strings_and_templates_are_copied_as_written() {
    assert_eq!(
        min("x = ' a  // b ' + \" /* c */ \""),
        "x=' a  // b '+\" /* c */ \""
    );
    assert_eq!(min("x = 'it\\'s  \\\\'"), "x='it\\'s  \\\\'");
    let t = "x = `a  ${ b ? `c  ${ d }` : { e: 1 }.e }  f`";
    assert_eq!(min(t), "x=`a  ${b?`c  ${d}`:{e:1}.e}  f`");
    assert_eq!(min("h(`\n  // kept\n`)"), "h(`\n  // kept\n`)");
}

#[test]
fn regex_literals_are_copied_as_written() {
    assert_eq!(min("s.replace(/ +/g, ' ')"), "s.replace(/ +/g,' ')");
    assert_eq!(min("return / a [/ ]/.test(x)"), "return/ a [/ ]/.test(x)");
    assert_eq!(min("const r = /\\/ x/"), "const r=/\\/ x/");
    assert_eq!(min("/a/ instanceof RegExp"), "/a/ instanceof RegExp");
    assert_eq!(min("/a/g .test(s)"), "/a/g.test(s)");
    assert_eq!(min("x = a / b / c"), "x=a/b/c");
    assert_eq!(min("x = (a) / 2"), "x=(a)/2");
    assert_eq!(min("x = a / /re/.source.length"), "x=a/ /re/.source.length");
}

#[test]
fn what_does_not_end_is_refused() {
    assert!(matches!(
        minify("x = 'open"),
        Err(JsError::Unterminated("string", _))
    ));
    assert!(matches!(
        minify("x = `open"),
        Err(JsError::Unterminated("template", _))
    ));
    assert!(matches!(
        minify("x = `${a"),
        Err(JsError::Unterminated("template expression", _))
    ));
    assert!(matches!(
        minify("/* open"),
        Err(JsError::Unterminated("comment", _))
    ));
    assert!(matches!(
        minify("x = /open\n"),
        Err(JsError::Unterminated("regex", _))
    ));
}

#[test]
fn every_script_of_the_app_minifies_and_a_second_pass_changes_nothing() {
    let scripts: Vec<_> = crate::web::ASSETS
        .iter()
        .filter(|a| a.content_type.starts_with("text/javascript"))
        .collect();
    assert!(scripts.len() > 20, "the app's scripts are listed");
    for asset in scripts {
        let text = std::str::from_utf8(asset.body).expect("the app's files are UTF-8");
        let once = minify(text).unwrap_or_else(|e| panic!("{}: {e}", asset.path));
        assert!(once.len() < text.len(), "{} shrinks", asset.path);
        assert_eq!(
            minify(&once).as_deref(),
            Ok(once.as_str()),
            "{}",
            asset.path
        );
    }
}
