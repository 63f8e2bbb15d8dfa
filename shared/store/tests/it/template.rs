//! `template.yaml` agrees with the table definitions in code, and its IAM stays
//! least-privilege.
use call_ingest_store::calls::tables::{self, ScalarKind, TableDef};
use serde_json::Value;

fn template() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml");
    serde_norway::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn kind(k: ScalarKind) -> &'static str {
    match k {
        ScalarKind::S => "S",
        ScalarKind::N => "N",
    }
}

fn key_schema(v: &Value) -> Vec<(String, String)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|k| (k["AttributeName"].as_str().unwrap().to_owned(), k["KeyType"].as_str().unwrap().to_owned()))
        .collect()
}

fn check(def: &TableDef) {
    let t = template();
    let props = &t["Resources"][def.logical_id]["Properties"];
    assert_eq!(t["Resources"][def.logical_id]["Type"], "AWS::DynamoDB::Table");
    let mut attrs: Vec<(String, String)> = props["AttributeDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["AttributeName"].as_str().unwrap().to_owned(), a["AttributeType"].as_str().unwrap().to_owned()))
        .collect();
    let mut expected: Vec<(String, String)> =
        def.key_attributes().into_iter().map(|(n, k)| (n.to_owned(), kind(k).to_owned())).collect();
    attrs.sort();
    expected.sort();
    expected.dedup();
    assert_eq!(attrs, expected, "{}: attribute definitions", def.logical_id);
    assert_eq!(
        key_schema(&props["KeySchema"]),
        [("pk".to_owned(), "HASH".to_owned()), ("sk".to_owned(), "RANGE".to_owned())]
    );
    assert_eq!(props["BillingMode"], "PAY_PER_REQUEST");
    assert_eq!(props["TimeToLiveSpecification"]["AttributeName"], tables::TTL_ATTRIBUTE);
    assert_eq!(props["TimeToLiveSpecification"]["Enabled"], true);
    assert_eq!(props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"], true);
    assert_eq!(props["DeletionProtectionEnabled"], true);
    let indexes = props["GlobalSecondaryIndexes"].as_array().cloned().unwrap_or_default();
    assert_eq!(indexes.len(), def.indexes.len(), "{}: index count", def.logical_id);
    for index in def.indexes {
        let found = indexes
            .iter()
            .find(|i| i["IndexName"] == index.name)
            .unwrap_or_else(|| panic!("index {} missing", index.name));
        let mut keys = vec![(index.hash.0.to_owned(), "HASH".to_owned())];
        keys.extend(index.range.map(|r| (r.0.to_owned(), "RANGE".to_owned())));
        assert_eq!(key_schema(&found["KeySchema"]), keys, "{}: keys", index.name);
        match index.include {
            None => assert_eq!(found["Projection"]["ProjectionType"], "KEYS_ONLY"),
            Some(list) => {
                assert_eq!(found["Projection"]["ProjectionType"], "INCLUDE");
                let mut got: Vec<&str> = found["Projection"]["NonKeyAttributes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .collect();
                let mut want = list.to_vec();
                got.sort();
                want.sort();
                assert_eq!(got, want, "{}: projected attributes", index.name);
            }
        }
    }
    let stream = props["StreamSpecification"]["StreamViewType"].as_str();
    assert_eq!(stream, def.stream.then_some("NEW_AND_OLD_IMAGES"), "{}: stream", def.logical_id);
}

#[test]
fn calls_table_in_the_template_matches_the_code() {
    check(&tables::CALLS);
}

#[test]
fn directory_table_in_the_template_matches_the_code() {
    check(&tables::DIRECTORY);
}

#[test]
fn functions_have_least_privilege_iam() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml")).unwrap();
    assert!(!text.contains("CrudPolicy"), "no *CrudPolicy");
    assert!(!text.contains("dynamodb:*"), "no wildcard actions");
    let t = template();
    let senders = ["CreateCallFunction", "SendCallDataFunction", "ProviderWebhookFunction"];
    let readers = ["GetCallFunction", "ListCallsFunction", "CallRevisionsFunction", "GetCallRawFunction"];
    let functions: Vec<&str> = senders.iter().chain(&readers).copied().chain(["EraseCallFunction"]).collect();
    let declared: Vec<&String> = t["Resources"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, r)| r["Type"] == "AWS::Serverless::Function")
        .map(|(name, _)| name)
        .collect();
    // The committer is checked on its own below and in the frames' test; `me`, the viewer
    // and the two trace functions just below; send-events and manage-endpoints in their own
    // tests.
    assert_eq!(declared.len(), functions.len() + 7, "every function is checked here: {declared:?}");
    trace_functions_have_least_privilege(&t);
    // `me` reads credentials and nothing else; the viewer has no permission at all.
    let me = &t["Resources"]["GetMeFunction"]["Properties"]["Policies"];
    assert_eq!(me[0]["Statement"].as_array().unwrap().len(), 1, "{me}");
    assert_eq!(me[0]["Statement"][0]["Action"], serde_json::json!(["dynamodb:GetItem", "dynamodb:BatchGetItem"]));
    assert_eq!(me[0]["Statement"][0]["Resource"]["Fn::GetAtt"][0], "DirectoryTable");
    assert_eq!(t["Resources"]["CallViewerFunction"]["Properties"]["Policies"], serde_json::json!([]));
    let committer = &t["Resources"]["CommitPendingFunction"]["Properties"];
    // The queue's pollers and a sweep; more would only take the account's concurrency.
    assert_eq!(committer["ReservedConcurrentExecutions"], 3, "two pollers and a sweep");
    let queued = &committer["Events"]["Queued"]["Properties"];
    assert_eq!(queued["ScalingConfig"]["MaximumConcurrency"], 2, "pollers within the reserved concurrency");
    assert_eq!(queued["FunctionResponseTypes"][0], "ReportBatchItemFailures", "a failed commit fails its message only");
    for statement in committer["Policies"][0]["Statement"].as_array().unwrap() {
        let actions = statement["Action"].to_string();
        let keys = &statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"];
        // Deletes: S3 objects, and trace entries (never a trace's item or a call).
        let deletes_an_unjoined_entry =
            actions == r#"["dynamodb:DeleteItem"]"# && keys == &serde_json::json!(["TKEY#*", "TOPEN#*", "TDAY#*"]);
        assert!(
            !actions.contains('*') && !actions.contains("Delete")
                || actions.contains("s3:DeleteObject")
                || deletes_an_unjoined_entry,
            "{actions}"
        );
    }
    // A commit takes a send of its workspace's budget: the workspace's limit (WS#…) and its
    // counter (RATE#…); a held report's release reads its hook and agent (HOOK#…, AGENT#…,
    // and an agent by remote id, WS#…#REMOTE#…); exactly these, never a credential (CRED#…). (In
    // AWS without these every commit was refused, counted as paced, and never stored.)
    let directory: Vec<(Value, Value)> = committer["Policies"][0]["Statement"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["Resource"]["Fn::GetAtt"][0] == "DirectoryTable")
        .map(|s| (s["Action"].clone(), s["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"].clone()))
        .collect();
    assert_eq!(
        directory,
        vec![
            (serde_json::json!(["dynamodb:GetItem", "dynamodb:BatchGetItem"]), serde_json::json!(["WS#*"])),
            // A held report's hook and agent (calls::held).
            (
                serde_json::json!(["dynamodb:GetItem", "dynamodb:BatchGetItem"]),
                serde_json::json!(["HOOK#*", "AGENT#*"])
            ),
            (serde_json::json!(["dynamodb:UpdateItem"]), serde_json::json!(["RATE#*"])),
        ],
        "the committer's directory rights"
    );
    for function in functions {
        let f = &t["Resources"][function]["Properties"];
        assert!(f["Policies"].is_array(), "{function} has explicit policies");
        for policy in f["Policies"].as_array().unwrap() {
            for statement in policy["Statement"].as_array().into_iter().flatten() {
                let actions: Vec<&str> =
                    statement["Action"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
                assert!(actions.iter().all(|a| !a.contains('*')), "{function}: wildcard action {actions:?}");
                // BatchWriteItem and DeleteItem can delete calls: only the eraser may
                // delete, one item at a time.
                assert!(!actions.contains(&"dynamodb:BatchWriteItem"), "{function} may not BatchWriteItem");
                if function != "EraseCallFunction" {
                    assert!(!actions.contains(&"dynamodb:DeleteItem"), "{function} may not DeleteItem");
                }
                // But the one action that names no resource (its own test below).
                assert!(
                    statement["Resource"].as_str().is_none_or(|r| !r.contains('*'))
                        || actions == ["comprehend:DetectPiiEntities"],
                    "{function}: wildcard resource"
                );
            }
        }
        assert_eq!(t["Resources"][function]["Metadata"]["BuildMethod"], "rust-cargolambda");
        let reserved = if senders.contains(&function) { "ReservedConcurrency" } else { "ReaderReservedConcurrency" };
        assert_eq!(f["ReservedConcurrentExecutions"]["Ref"], reserved, "{function}: no reserved concurrency");
        // The only directory write is the rate counters' UpdateItem, bound to their keys.
        let directory_writes: Vec<&Value> = f["Policies"][0]["Statement"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["Resource"]["Fn::GetAtt"][0] == "DirectoryTable")
            .filter(|s| {
                s["Action"].as_array().unwrap().iter().any(|a| a != "dynamodb:GetItem" && a != "dynamodb:BatchGetItem")
            })
            .collect();
        assert_eq!(directory_writes.len(), 1, "{function}: {directory_writes:?}");
        assert_eq!(directory_writes[0]["Action"], serde_json::json!(["dynamodb:UpdateItem"]));
        // Senders count sends (RATE#…) and their model's requests (MODEL#…), readers and
        // the eraser reads (READS#…): each only its own budgets' counters (a reader bound to
        // RATE#… had every count refused).
        let counters = match senders.contains(&function) {
            true => serde_json::json!(["RATE#*", "MODEL#*"]),
            false => serde_json::json!(["READS#*"]),
        };
        assert_eq!(
            directory_writes[0]["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"], counters,
            "{function}: directory writes not bound to its budget's counters"
        );
    }
    // Every write to the Calls table is bound to the keys it is for: call items, and the id
    // counter for the UpdateItem that takes a block of ids. Nothing else there (a write
    // that could reset the counter would hand out ids twice).
    for function in senders.iter().chain(["EraseCallFunction"].iter()) {
        for statement in t["Resources"][function]["Properties"]["Policies"][0]["Statement"].as_array().unwrap() {
            if statement["Resource"]["Fn::GetAtt"][0] != "CallsTable" {
                continue;
            }
            let actions: Vec<&str> =
                statement["Action"].as_array().unwrap().iter().filter_map(|a| a.as_str()).collect();
            if actions.iter().all(|a| reads_only(a)) {
                continue;
            }
            let keys = &statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"];
            let tombstones = serde_json::json!(["TRACE#*"]);
            let entries = serde_json::json!(["TKEY#*", "TOPEN#*"]);
            let later = serde_json::json!(["TKEY#*", "TOPEN#*", "TDAY#*"]);
            match keys.as_array().map(Vec::as_slice) {
                Some([k]) if k == "CALL#*" => {}
                // The eraser erases the call's traces too: their items made tombstones, their
                // entries deleted (and written again for parts a trace used again keeps).
                Some(_)
                    if *function == "EraseCallFunction"
                        && (keys == &tombstones && actions == ["dynamodb:UpdateItem"]
                            || keys == &entries && actions == ["dynamodb:DeleteItem"]
                            || keys == &later && actions == ["dynamodb:PutItem"]) => {}
                Some([k]) if k == "COUNTER" && actions == ["dynamodb:UpdateItem"] && senders.contains(function) => {}
                // A revision notes a call holding a raw body again after its raw retention;
                // the raw sweep deletes the note.
                Some([k]) if k == "RAWDUE#*" && actions == ["dynamodb:PutItem"] => {}
                // A call created late is noted for the raw sweep (RAWLATE#…).
                Some([k]) if k == "RAWLATE#*" && actions == ["dynamodb:UpdateItem"] => {}
                Some([a, b])
                    if *function == "EraseCallFunction"
                        && *a == "RAWDUE#*"
                        && *b == "RAWLATE#*"
                        && actions == ["dynamodb:DeleteItem"] => {}
                // Where the raw-retention sweep stands, per workspace (`calls::walk`).
                Some([k])
                    if k == "WALK#*"
                        && *function == "EraseCallFunction"
                        && actions == ["dynamodb:GetItem", "dynamodb:PutItem"] => {}
                _ => panic!("{function}: {actions:?} on the Calls table not bound to call items: {keys}"),
            }
        }
    }
    // The readers cannot change a call; the eraser can only mark it, delete it and its
    // frames and pending submissions (listed under pending/ only), and leave a tombstone.
    let reads = ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "s3:GetObject", "s3:ListBucket"];
    for (function, allowed) in readers.iter().map(|r| (*r, &[][..])).chain([(
        "EraseCallFunction",
        &[
            "dynamodb:DeleteItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "s3:DeleteObject",
            "s3:PutObject",
            "s3:ListBucket",
        ][..],
    )]) {
        for statement in t["Resources"][function]["Properties"]["Policies"][0]["Statement"].as_array().unwrap() {
            if statement["Sid"] != "CountRequests" {
                for action in statement["Action"].as_array().unwrap() {
                    let action = action.as_str().unwrap();
                    assert!(reads.contains(&action) || allowed.contains(&action), "{function} may {action}");
                }
            }
        }
    }
    // Only the lister signs cursors, with a key generated at deploy time.
    let lister = &t["Resources"]["ListCallsFunction"]["Properties"]["Environment"]["Variables"];
    assert!(lister["CURSOR_SECRET"]["Fn::Sub"].as_str().unwrap().contains("resolve:secretsmanager:${CursorSecret}"));
    assert_eq!(t["Resources"]["CursorSecret"]["Properties"]["GenerateSecretString"]["PasswordLength"], 64);
    assert_eq!(
        t["Globals"]["Function"]["Environment"]["Variables"]["RATE_LIMIT_PER_SECOND"]["Ref"],
        "RateLimitPerSecond"
    );
}

/// The trace receiver keeps batches and counts its own budget, nothing else; the trace
/// reader reads, and writes only a trace's join (`call`) and its unjoined entry.
fn trace_functions_have_least_privilege(t: &Value) {
    let receiver = &t["Resources"]["OtelTracesFunction"]["Properties"]["Policies"][0]["Statement"];
    for statement in receiver.as_array().unwrap() {
        assert_ne!(statement["Resource"]["Fn::GetAtt"][0], "CallsTable", "the receiver never touches the Calls table");
        if statement["Action"] == serde_json::json!(["dynamodb:UpdateItem"]) {
            let keys = &statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"];
            assert_eq!(keys, &serde_json::json!(["TRACES#*"]), "its own budget's counters only");
        }
    }
    let reader = &t["Resources"]["CallTraceFunction"]["Properties"]["Policies"][0]["Statement"];
    for statement in reader.as_array().unwrap() {
        let actions: Vec<&str> = statement["Action"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let keys = &statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"];
        if statement["Resource"]["Fn::GetAtt"][0] == "CallsTable" && !actions.iter().all(|a| reads_only(a)) {
            let join = actions == ["dynamodb:UpdateItem"] && keys == &serde_json::json!(["TRACE#*"]);
            let unlist = actions == ["dynamodb:DeleteItem"] && keys == &serde_json::json!(["TOPEN#*"]);
            let find = actions == ["dynamodb:PutItem"] && keys == &serde_json::json!(["TKEY#*"]);
            assert!(join || unlist || find, "the trace reader may {actions:?} on {keys}");
        }
    }
}

fn reads_only(action: &str) -> bool {
    ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:Scan"].contains(&action)
}

/// What a function's statements allow on S3: (action, what: `frames/*`, `pending/*`,
/// `failed/*`, or `bucket` for the bucket itself), in order.
fn s3_rights(t: &Value, function: &str) -> Vec<(String, String)> {
    let mut rights = Vec::new();
    for statement in t["Resources"][function]["Properties"]["Policies"][0]["Statement"].as_array().unwrap() {
        let resources: Vec<&Value> = match statement["Resource"].as_array() {
            Some(list) => list.iter().collect(),
            None => vec![&statement["Resource"]],
        };
        for action in statement["Action"].as_array().unwrap().iter().filter_map(Value::as_str) {
            if !action.starts_with("s3:") {
                continue;
            }
            for resource in &resources {
                let what = match (resource["Fn::Sub"].as_str(), resource["Fn::GetAtt"][0].as_str()) {
                    (Some(sub), _) => {
                        sub.strip_prefix("${FramesBucket.Arn}/").expect("only the frames' bucket").to_owned()
                    }
                    (None, Some("FramesBucket")) => {
                        assert_eq!(action, "s3:ListBucket", "{function}: only listing on the bucket itself");
                        "bucket".to_owned()
                    }
                    _ => panic!("{function}: {action} on {resource}"),
                };
                rights.push((action.to_owned(), what));
            }
        }
    }
    rights
}

/// Each function touches the frames' bucket only as its job needs: senders write frames and
/// pending calls, readers read frames, the eraser deletes the call's frames and pending
/// calls, the committer commits pending calls, the lister nothing. Listing (object keys
/// are digests) is what makes a missing object 404 rather than 403. The bucket is
/// private, encrypted, TLS only.
#[test]
fn frames_are_reached_least_privilege_and_the_bucket_is_private() {
    let t = template();
    let sender = [("s3:PutObject", "frames/*"), ("s3:DeleteObject", "frames/*"), ("s3:PutObject", "pending/*")];
    let reader = [("s3:GetObject", "frames/*"), ("s3:ListBucket", "bucket")];
    let webhook = [sender.as_slice(), &[("s3:PutObject", "held/*")]].concat();
    let expected: [(&str, &[(&str, &str)]); 11] = [
        ("SendCallDataFunction", &sender),
        ("CreateCallFunction", &sender),
        ("ProviderWebhookFunction", &webhook),
        ("GetCallFunction", &reader),
        ("CallRevisionsFunction", &reader),
        ("GetCallRawFunction", &reader),
        (
            "EraseCallFunction",
            &[
                ("s3:PutObject", "frames/*"),
                // The raw-retention sweep rewrites frames without their raw body.
                ("s3:GetObject", "frames/*"),
                ("s3:DeleteObject", "pending/*"),
                ("s3:DeleteObject", "failed/*"),
                ("s3:DeleteObject", "held/*"),
                ("s3:PutObject", "traces/spans/*"),
                ("s3:ListBucket", "bucket"),
            ],
        ),
        ("ListCallsFunction", &[]),
        (
            "CommitPendingFunction",
            &[
                ("s3:ListBucket", "bucket"),
                ("s3:GetObject", "pending/*"),
                ("s3:DeleteObject", "pending/*"),
                ("s3:PutObject", "frames/*"),
                ("s3:PutObject", "failed/*"),
                ("s3:GetObject", "held/*"),
                ("s3:DeleteObject", "held/*"),
                ("s3:PutObject", "pending/*"),
                ("s3:GetObject", "traces/in/*"),
                ("s3:DeleteObject", "traces/in/*"),
                ("s3:PutObject", "traces/spans/*"),
            ],
        ),
        ("OtelTracesFunction", &[("s3:PutObject", "traces/in/*")]),
        ("CallTraceFunction", &[("s3:ListBucket", "bucket"), ("s3:GetObject", "traces/spans/*")]),
    ];
    for (function, wanted) in expected {
        let mut got = s3_rights(&t, function);
        let mut wanted: Vec<(String, String)> = wanted.iter().map(|(a, w)| (a.to_string(), w.to_string())).collect();
        got.sort();
        wanted.sort();
        assert_eq!(got, wanted, "{function}");
    }
    assert_eq!(t["Globals"]["Function"]["Environment"]["Variables"]["FRAMES_BUCKET"]["Ref"], "FramesBucket");
    // The committer writes calls as the senders do: call items and the id counter only.
    for statement in
        t["Resources"]["CommitPendingFunction"]["Properties"]["Policies"][0]["Statement"].as_array().unwrap()
    {
        let actions: Vec<&str> = statement["Action"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let writes = actions.iter().any(|a| a.starts_with("dynamodb:") && !reads_only(a));
        if writes && statement["Resource"]["Fn::GetAtt"][0] == "CallsTable" {
            let keys = &statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"];
            let allowed = [
                serde_json::json!(["CALL#*"]),
                serde_json::json!(["COUNTER"]),
                // A call revised after its raw retention, or created late, noted for the
                // raw sweep.
                serde_json::json!(["RAWDUE#*"]),
                serde_json::json!(["RAWLATE#*"]),
                // Trace batches indexed: a trace's item; its keys' entries, the unjoined list,
                // the traces of a day, written and (only these) deleted.
                serde_json::json!(["TRACE#*"]),
                serde_json::json!(["TKEY#*", "TOPEN#*", "TDAY#*"]),
            ];
            assert!(allowed.contains(keys), "{statement}");
        }
    }
    let bucket = &t["Resources"]["FramesBucket"]["Properties"];
    assert_eq!(bucket["PublicAccessBlockConfiguration"]["RestrictPublicBuckets"], true);
    assert!(bucket["BucketEncryption"].is_object());
    let policy = &t["Resources"]["FramesBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"][0];
    assert_eq!(
        (policy["Effect"].as_str(), policy["Condition"]["Bool"]["aws:SecureTransport"].as_str()),
        (Some("Deny"), Some("false"))
    );
}

/// provider-webhook opens only data keys sealed for a hook of a workspace: both keys of that
/// encryption context must be there (`ForAllValues` alone holds for a Decrypt with no
/// context at all: the `Null` condition refuses that), and no other.
#[test]
fn hook_secrets_open_only_with_the_hooks_whole_encryption_context() {
    let t = template();
    let statements = t["Resources"]["ProviderWebhookFunction"]["Properties"]["Policies"][0]["Statement"].clone();
    let open = statements.as_array().unwrap().iter().find(|s| s["Sid"] == "OpenHookSecrets").expect("OpenHookSecrets");
    assert_eq!(open["Action"], serde_json::json!(["kms:Decrypt"]));
    let condition = &open["Condition"];
    assert_eq!(
        condition["ForAllValues:StringEquals"]["kms:EncryptionContextKeys"],
        serde_json::json!(["hook", "workspace"])
    );
    assert_eq!(condition["Null"]["kms:EncryptionContextKeys"], "false", "a Decrypt with no context: {condition}");
    assert_eq!(condition["StringLike"]["kms:EncryptionContext:hook"], "*", "{condition}");
    assert_eq!(condition["StringLike"]["kms:EncryptionContext:workspace"], "*", "{condition}");
}

/// The senders open only workspaces' identity keys (issue 32), by the whole encryption
/// context with its purpose, never a hook's secret.
#[test]
fn senders_open_only_identity_keys() {
    let t = template();
    for function in ["SendCallDataFunction", "CreateCallFunction"] {
        let statements = t["Resources"][function]["Properties"]["Policies"][0]["Statement"].clone();
        let kms: Vec<&serde_json::Value> =
            statements.as_array().unwrap().iter().filter(|s| s["Action"].to_string().contains("kms:")).collect();
        assert_eq!(kms.len(), 1, "{function}");
        let open = kms[0];
        assert_eq!(open["Sid"], "OpenIdentityKeys");
        assert_eq!(open["Action"], serde_json::json!(["kms:Decrypt"]));
        let condition = &open["Condition"];
        assert_eq!(condition["StringEquals"]["kms:EncryptionContext:hook"], "workspace-identity", "{function}");
        assert_eq!(condition["Null"]["kms:EncryptionContextKeys"], "false", "{function}");
        assert_eq!(
            condition["ForAllValues:StringEquals"]["kms:EncryptionContextKeys"],
            serde_json::json!(["hook", "workspace"])
        );
    }
}

/// The retention sweep (issue 32) runs on a schedule in the function that erases, may query
/// only the listing index besides what it had, and counts real days: the local stack's
/// shortened day (`RETENTION_DAY_SECONDS`) is never set in AWS.
#[test]
fn retention_runs_on_a_schedule_counting_real_days() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml")).unwrap();
    assert!(!text.contains("RETENTION_DAY_SECONDS"), "a shortened day is the local stack's only");
    assert!(!text.contains("RETENTION_DAY_WORKSPACES"), "a shortened day is the local stack's only");
    let t = template();
    let erase = &t["Resources"]["EraseCallFunction"]["Properties"];
    assert_eq!(erase["Events"]["Retention"]["Type"], "Schedule");
    let statements = erase["Policies"][0]["Statement"].as_array().unwrap();
    let find = statements.iter().find(|s| s["Sid"] == "FindExpiredCalls").expect("FindExpiredCalls");
    assert_eq!(find["Action"], serde_json::json!(["dynamodb:Query"]));
    assert_eq!(find["Resource"]["Fn::Sub"], "${CallsTable.Arn}/index/by-workspace-listed");
    // The raw-retention sweep reads frames (never pending or held copies) and keeps where it
    // stands in WALK#… items only.
    let read = statements.iter().find(|s| s["Sid"] == "RewriteFrames").expect("RewriteFrames");
    assert_eq!(read["Action"], serde_json::json!(["s3:GetObject"]));
    assert_eq!(read["Resource"]["Fn::Sub"], "${FramesBucket.Arn}/frames/*");
    let place = statements.iter().find(|s| s["Sid"] == "KeepSweepPlace").expect("KeepSweepPlace");
    assert_eq!(place["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"], serde_json::json!(["WALK#*"]));
}

/// The model of personal data (issue 32): Comprehend's DetectPiiEntities names no resource,
/// so its statement is the one a function may have with `Resource: "*"`, exactly that
/// action, and only the three functions that store what a client sends have it.
#[test]
fn only_the_senders_may_detect_personal_data_and_only_that_has_every_resource() {
    let t = template();
    let senders = ["SendCallDataFunction", "CreateCallFunction", "ProviderWebhookFunction"];
    let resources = t["Resources"].as_object().unwrap();
    for (name, resource) in resources.iter().filter(|(_, r)| r["Type"] == "AWS::Serverless::Function") {
        let statements = resource["Properties"]["Policies"][0]["Statement"].as_array().cloned().unwrap_or_default();
        let every: Vec<&Value> = statements.iter().filter(|s| s["Resource"] == "*").collect();
        match senders.contains(&name.as_str()) {
            true => {
                assert_eq!(every.len(), 1, "{name}");
                assert_eq!(every[0]["Sid"], "DetectPersonalData", "{name}");
                assert_eq!(every[0]["Action"], serde_json::json!(["comprehend:DetectPiiEntities"]), "{name}");
                assert!(every[0].get("Condition").is_none(), "{name}");
            }
            false => assert!(every.is_empty(), "{name} may act on every resource: {every:?}"),
        }
        let comprehend = statements.iter().filter(|s| s["Action"].to_string().contains("comprehend:")).count();
        assert_eq!(comprehend, usize::from(senders.contains(&name.as_str())), "{name}");
    }
}

/// Events out (issue 33): an endpoint may be http to loopback only where
/// `EVENTS_ALLOW_LOOPBACK` is set, which the local stack alone does: never in AWS.
#[test]
fn loopback_endpoints_are_the_local_stacks_only() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml")).unwrap();
    assert!(!text.contains("EVENTS_ALLOW_LOOPBACK"), "loopback endpoints are the local stack's only");
}

/// Each statement's actions and `dynamodb:LeadingKeys`, as JSON text ("null" for none).
fn actions_and_keys(statements: &[Value]) -> Vec<(String, String)> {
    statements
        .iter()
        .map(|s| {
            (s["Action"].to_string(), s["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"].to_string())
        })
        .collect()
}

/// Events out (issue 33): send-events reads endpoints and agents, notes endpoints' health,
/// keeps attempts, opens endpoints' secrets only (never a hook's nor an identity key), and
/// queues on its own queue; it is fed by the Calls table's stream (calls' heads only) and
/// that queue, both with partial batch failures; the schedule's waits are AWS's own.
#[test]
fn send_events_has_least_privilege_and_both_sources() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml")).unwrap();
    assert!(!text.contains("EVENTS_RETRY_SCALE"), "a shortened schedule is the local stack's only");
    let t = template();
    let f = &t["Resources"]["SendEventsFunction"]["Properties"];
    let statements = f["Policies"][0]["Statement"].as_array().unwrap();
    let rights = actions_and_keys(statements);
    let want = [
        (r#"["dynamodb:GetItem","dynamodb:BatchGetItem","dynamodb:Query"]"#, r#"["WS#*","EP#*","AGENT#*"]"#),
        (r#"["dynamodb:UpdateItem"]"#, r#"["EP#*"]"#),
        (r#"["dynamodb:PutItem"]"#, r#"["EPA#*"]"#),
        (r#"["kms:Decrypt"]"#, "null"),
        (r#"["sqs:SendMessage","sqs:ChangeMessageVisibility"]"#, "null"),
    ];
    assert_eq!(rights, want.map(|(a, k)| (a.to_owned(), k.to_owned())));
    let open = &statements[3]["Condition"];
    assert_eq!(open["StringLike"]["kms:EncryptionContext:hook"], "ep_*", "endpoints' secrets only");
    assert_eq!(open["Null"]["kms:EncryptionContextKeys"], "false");
    for table in &statements[..3] {
        assert_eq!(table["Resource"]["Fn::GetAtt"][0], "DirectoryTable", "never the Calls table");
    }
    assert_eq!(statements[4]["Resource"]["Fn::GetAtt"][0], "EventDeliveriesQueue");
    let changes = &f["Events"]["Changes"]["Properties"];
    assert_eq!(changes["Stream"]["Fn::GetAtt"], serde_json::json!(["CallsTable", "StreamArn"]));
    assert_eq!(changes["FunctionResponseTypes"][0], "ReportBatchItemFailures");
    assert_eq!(changes["FilterCriteria"]["Filters"][0]["Pattern"], r#"{"dynamodb":{"Keys":{"sk":{"S":["HEAD"]}}}}"#);
    let deliveries = &f["Events"]["Deliveries"]["Properties"];
    assert_eq!(deliveries["Queue"]["Fn::GetAtt"][0], "EventDeliveriesQueue");
    assert_eq!(deliveries["FunctionResponseTypes"][0], "ReportBatchItemFailures");
    let queue = &t["Resources"]["EventDeliveriesQueue"]["Properties"];
    let receives = queue["RedrivePolicy"]["maxReceiveCount"].as_u64().unwrap();
    assert!(receives > u64::from(call_ingest_core::events::retry::ATTEMPTS), "the whole schedule: {receives}");
    // An operator hears of a stream falling behind (events lost past 24 hours) and of
    // deliveries given up on.
    let behind = &t["Resources"]["EventsStreamBehindAlarm"]["Properties"];
    assert_eq!(
        (behind["MetricName"].as_str(), behind["Dimensions"][0]["Value"]["Ref"].as_str()),
        (Some("IteratorAge"), Some("SendEventsFunction"))
    );
    let dead = &t["Resources"]["EventDeliveriesDeadLetterAlarm"]["Properties"];
    assert_eq!(dead["Dimensions"][0]["Value"]["Fn::GetAtt"][0], "EventDeliveriesDeadLetterQueue");
}

/// The event endpoints over the API (issue 33): credentials, its read budget, the
/// workspace's listing, the endpoints and their listing and count (never a credential,
/// agent, hook, attempt or call), and data keys sealed for endpoints only (never opened:
/// no Decrypt, so it cannot read an endpoint's secret back, nor a hook's).
#[test]
fn manage_endpoints_has_least_privilege() {
    let t = template();
    let f = &t["Resources"]["ManageEndpointsFunction"]["Properties"];
    let statements = f["Policies"][0]["Statement"].as_array().unwrap();
    let rights = actions_and_keys(statements);
    let want = [
        (r#"["dynamodb:GetItem","dynamodb:BatchGetItem"]"#, "null"),
        (r#"["dynamodb:UpdateItem"]"#, r#"["READS#*"]"#),
        (r#"["dynamodb:Query"]"#, r#"["WS#*"]"#),
        (r#"["dynamodb:PutItem","dynamodb:UpdateItem","dynamodb:DeleteItem"]"#, r#"["EP#*","WS#*"]"#),
        (r#"["kms:GenerateDataKey"]"#, "null"),
    ];
    assert_eq!(rights, want.map(|(a, k)| (a.to_owned(), k.to_owned())));
    for table in &statements[..4] {
        assert_eq!(table["Resource"]["Fn::GetAtt"][0], "DirectoryTable", "never the Calls table");
    }
    let seal = &statements[4]["Condition"];
    assert_eq!(seal["StringLike"]["kms:EncryptionContext:hook"], "ep_*", "endpoints' secrets only");
    assert_eq!(seal["Null"]["kms:EncryptionContextKeys"], "false");
    // Its routes' bursts together fit its reserved concurrency: what API Gateway lets
    // through, Lambda runs (a throttled invocation is a 500 to the client).
    let routes: Vec<String> = f["Events"]
        .as_object()
        .unwrap()
        .values()
        .map(|e| {
            format!("{} {}", e["Properties"]["Method"].as_str().unwrap(), e["Properties"]["Path"].as_str().unwrap())
        })
        .collect();
    assert_eq!(routes.len(), 3, "{routes:?}");
    let settings = &t["Resources"]["CallsApi"]["Properties"]["RouteSettings"];
    let bursts: u64 = routes.iter().map(|r| settings[r]["ThrottlingBurstLimit"].as_u64().expect(r)).sum();
    assert!(bursts <= f["ReservedConcurrentExecutions"].as_u64().unwrap(), "{bursts}");
}
