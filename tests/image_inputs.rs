//! Image inputs: a dataset whose chat messages carry `image_url` parts (a data URI and plain
//! URLs) is sent as written; each record counts its images and, where the server's usage says
//! (`prompt_tokens_details.image_tokens`, as the simulator reports it), the prompt tokens they
//! cost; the summary and the report's `replies:` line add them up.

mod common;

#[test]
fn image_parts_are_sent_counted_and_their_token_cost_recorded() {
    let dir = tempfile::tempdir().unwrap();
    // A 1×1 PNG as a data URI, two images by URL, and a line without images.
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAAAAgABVKJPXQAAAABJRU5ErkJggg==";
    let lines = [
        format!(
            r#"{{"messages":[{{"role":"user","content":[{{"type":"text","text":"What is in this picture?"}},{{"type":"image_url","image_url":{{"url":"data:image/png;base64,{png}"}}}}]}}]}}"#
        ),
        r#"{"messages":[{"role":"user","content":[{"type":"text","text":"Compare these two."},{"type":"image_url","image_url":{"url":"https://example.com/a.jpg"}},{"type":"image_url","image_url":{"url":"https://example.com/b.jpg"}}]}]}"#.to_string(),
        r#"{"messages":[{"role":"user","content":"No image here, just text."}]}"#.to_string(),
    ];
    std::fs::write(dir.path().join("images.jsonl"), lines.join("\n") + "\n").unwrap();
    let s = dir.path().join("img.toml");
    std::fs::write(
        &s,
        "name = \"img\"\nseed = 2\n[request]\nignore_eos = true\n[workload]\ntype = \"dataset\"\npath = \"images.jsonl\"\noutput_tokens = 8\n[load]\nconcurrency = 2\nrequests = 6\n",
    )
    .unwrap();
    let (run, _) = common::run_with_truth(&s, &[]);
    // The simulator's template: <bos>, a 3-token header, the words, 64 tokens an image, an end
    // token, the 3-token assistant header.
    let want = [
        (Some(1), 1 + 3 + 5 + 64 + 1 + 3),
        (Some(2), 1 + 3 + 3 + 128 + 1 + 3),
        (None, 1 + 3 + 5 + 1 + 3),
    ];
    for r in run["requests"].as_array().unwrap() {
        assert_eq!(r["outcome"], "ok", "{r}");
        let (images, prompt) = want[(r["index"].as_u64().unwrap() % 3) as usize];
        assert_eq!(r["prompt_tokens"], prompt, "{r}");
        match images {
            Some(n) => {
                assert_eq!(r["images"]["sent"], n, "{r}");
                assert_eq!(r["images"]["tokens"], 64 * n, "{r}");
            }
            None => assert!(r.get("images").is_none(), "{r}"),
        }
    }
    let i = &run["summary"]["tokens"]["images"];
    assert_eq!(
        (&i["requests"], &i["images"], &i["image_tokens"]),
        (&4.into(), &6.into(), &384.into())
    );
    let csv = std::fs::read_to_string(dir.path().join("o/requests.csv")).unwrap();
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert_eq!(&head[head.len() - 2..], ["images", "image_tokens"]);
    // The report's `replies:` line (the run again, not quiet).
    let again = dir.path().join("again");
    let (code, text) =
        common::bench_text(&["run", s.to_str().unwrap(), "--out", again.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains(
            "6 images in 4 prompts, 384 prompt tokens by the server's usage (64.0 an image)"
        ),
        "{text}"
    );
}
